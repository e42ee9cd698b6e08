package persist

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

const (
	bootA = "0b7d5a6e-3f1c-4e2a-9d8b-5c4a3b2a1f00"
	bootB = "7e1f2d3c-4b5a-4968-8776-655443322110"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sampleState is a realistic mid-life state: a latched fatal counter, a
// down port, a velocity snapshot and a card anomaly.
func sampleState() *State {
	ts := time.Date(2025, 6, 15, 10, 30, 0, 0, time.UTC)
	st := NewState(bootA)
	st.CounterSnapshots["mlx5_0:1:link_downed"] = CounterSnapshot{Value: 3, Timestamp: ts}
	st.CounterSnapshots["mlx5_0:1:symbol_error"] = CounterSnapshot{Value: 1500000, Timestamp: ts}
	st.BreachFlags["mlx5_0:1:link_downed"] = BreachFlag{Breached: true, CheckName: "InfiniBandDegradationCheck", IsFatal: true, Since: ts.Add(-5 * time.Minute), Definition: "delta>0"}
	st.PortStates["mlx5_0_1"] = PortState{State: "1: DOWN", PhysicalState: "3: Disabled", Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand"}
	st.PortStates["mlx5_1_1"] = PortState{State: "4: ACTIVE", PhysicalState: "5: LinkUp", Device: "mlx5_1", Port: 1, LinkLayer: "InfiniBand"}
	st.KnownDevices = []string{"mlx5_0", "mlx5_1"}
	st.CardAnomalies["0000:3b:00"] = CardAnomaly{Role: "compute", Active: 0, Expected: 1, Since: ts}
	st.Saturated["mlx5_1:1:port_xmit_wait"] = ts
	st.Disappeared = []string{"mlx5_7"}
	return st
}

func TestState_6_6_MissingFileIsFresh(t *testing.T) {
	st, status, err := Load(filepath.Join(t.TempDir(), "state.json"))
	if err != nil || status != LoadFresh {
		t.Fatalf("Load = %v, %v; want LoadFresh, nil", status, err)
	}
	if st.CounterSnapshots == nil || st.BreachFlags == nil || st.PortStates == nil || st.KnownDevices == nil ||
		st.CardAnomalies == nil || st.Saturated == nil {
		t.Fatalf("fresh state has nil maps: %+v", st)
	}
	if st.BootID != "" || st.Version != SchemaVersion {
		t.Fatalf("fresh state = %+v", st)
	}
}

func TestState_9_2_SeedShapedFileLoads(t *testing.T) {
	// A file in the seed's 9.2 shape, as the seed's own implementation
	// writes it (no fields beyond the seed's).
	path := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, path, `{
  "version": 1,
  "boot_id": "`+bootA+`",
  "counter_snapshots": {
    "mlx5_2:1:link_downed": {"value": 7, "timestamp": "2025-01-02T03:04:05Z"}
  },
  "breach_flags": {
    "mlx5_2:1:link_downed": {"breached": true, "check_name": "InfiniBandStateCheck", "is_fatal": true, "since": "2025-01-02T03:00:00Z"}
  },
  "port_states": {
    "mlx5_2_1": {"state": "1: DOWN", "physical_state": "2: Polling", "device": "mlx5_2", "port": 1, "link_layer": "InfiniBand"}
  },
  "known_devices": ["mlx5_2", "mlx5_3"]
}`)
	st, rep, err := LoadDetailed(path)
	if err != nil || rep.Status != LoadLoaded || len(rep.Dropped) != 0 {
		t.Fatalf("LoadDetailed = %+v, %v", rep, err)
	}
	if got := st.CounterSnapshots["mlx5_2:1:link_downed"].Value; got != 7 {
		t.Errorf("snapshot value = %d", got)
	}
	if !st.BreachFlags["mlx5_2:1:link_downed"].Breached || st.PortStates["mlx5_2_1"].PhysicalState != "2: Polling" {
		t.Errorf("state = %+v", st)
	}
	if !reflect.DeepEqual(st.KnownDevices, []string{"mlx5_2", "mlx5_3"}) {
		t.Errorf("known devices = %v", st.KnownDevices)
	}
	if st.CardAnomalies == nil || st.Saturated == nil {
		t.Errorf("optional maps not normalised")
	}
}

func TestState_6_6_VersionZeroOrMissingIsOne(t *testing.T) {
	for _, body := range []string{`{}`, `{"version":0}`, `{"version":null}`, `{"version":1}`} {
		path := filepath.Join(t.TempDir(), "state.json")
		writeFile(t, path, body)
		st, status, err := Load(path)
		if err != nil || status != LoadLoaded || st.Version != 1 {
			t.Errorf("%s: Load = %v, %v, version %v", body, status, err, st)
		}
	}
}

func TestState_6_6_CorruptFileStartsFreshAndIsKept(t *testing.T) {
	cases := []struct{ name, body, reason string }{
		{"empty", "", "empty"},
		{"whitespace", " \n\t", "empty"},
		{"garbage", "\x00\x01\x02binary", "not a JSON object"},
		{"truncated", `{"version":1,"boot_id":"` + bootA[:10], "invalid JSON"},
		{"null", "null", "not a JSON object"},
		{"array", "[]", "not a JSON object"},
		{"wrong types", `{"version":1,"counter_snapshots":"oops"}`, "state schema"},
		{"trailing data", `{"version":1} {"version":1}`, "invalid JSON"},
		{"negative version", `{"version":-1}`, "negative"},
		{"fractional version", `{"version":0.5}`, "whole number"},
		{"string version", `{"version":"1"}`, "not a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			writeFile(t, path, c.body)
			st, rep, err := LoadDetailed(path)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if rep.Status != LoadCorrupt || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("report = %+v; want corrupt with %q", rep, c.reason)
			}
			if st == nil || st.BootID != "" || len(st.PortStates) != 0 || st.PortStates == nil {
				t.Fatalf("state = %+v; want empty", st)
			}
			if rep.Preserved != path+CorruptSuffix {
				t.Fatalf("preserved = %q", rep.Preserved)
			}
			kept, err := os.ReadFile(path + CorruptSuffix)
			if err != nil || string(kept) != c.body {
				t.Fatalf("corrupt copy = %q, %v", kept, err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("corrupt file still in place: %v", err)
			}
		})
	}
}

func TestState_NewerSchemaIsRefused(t *testing.T) {
	cases := []struct{ name, body string }{
		{"version 3", `{"version":3,"boot_id":"x"}`},
		{"incompatible fields", `{"version":2,"counter_snapshots":[1,2,3]}`},
		{"upper-case key", `{"VERSION":3}`},
		{"exponent", `{"version":1e3}`},
		{"fraction above", `{"version":2.5}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			writeFile(t, path, c.body)
			st, _, err := Load(path)
			if !errors.Is(err, ErrNewerSchema) || st != nil {
				t.Fatalf("Load = %v, %v; want ErrNewerSchema", st, err)
			}
			b, _ := os.ReadFile(path)
			if string(b) != c.body {
				t.Fatalf("file was touched: %q", b)
			}
		})
	}
	path := "/var/lib/nichealthd/state.json"
	err := (&NewerSchemaError{Path: path, Version: 3}).Error()
	want := "state file /var/lib/nichealthd/state.json has schema version 3, newer than this nichealthd understands (1); refusing to overwrite it: upgrade nichealthd or move the file away"
	if err != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}

func TestState_6_6_UnreadableFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a directory = %v; want an error naming it", err)
	}
}

func TestState_6_6_ValidationDropsBadEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, path, `{
  "version": 1,
  "boot_id": "`+strings.ToUpper(bootA)+`",
  "counter_snapshots": {
    "mlx5_0:1:link_downed": {"value": 1, "timestamp": "2025-01-01T00:00:00Z"},
    "mlx5_0:-1:link_downed": {"value": 1, "timestamp": "2025-01-01T00:00:00Z"},
    "mlx5_0:x:link_downed": {"value": 1, "timestamp": "2025-01-01T00:00:00Z"},
    "mlx5_0:1": {"value": 1, "timestamp": "2025-01-01T00:00:00Z"},
    "../etc:1:c": {"value": 1, "timestamp": "2025-01-01T00:00:00Z"},
    "mlx5_0:1:symbol_error": {"value": 1}
  },
  "breach_flags": {
    "mlx5_0:1:link_downed": {"breached": true},
    "nonsense": {"breached": true}
  },
  "port_states": {
    "mlx5_0_1": {"state": "4: ACTIVE", "physical_state": "5: LinkUp", "device": "mlx5_0", "port": 1},
    "mlx5_0_2": {"state": "4: ACTIVE", "physical_state": "5: LinkUp"},
    "mlx5_0_3": {"state": "4: ACTIVE", "device": "mlx5_0", "port": -3},
    "mlx5_0_4": {"state": "4: ACTIVE", "device": "mlx5_9", "port": 4},
    "noport": {"state": "4: ACTIVE"}
  },
  "known_devices": ["mlx5_0", "", "mlx5_0", "a/b", "mlx5_1"],
  "card_anomalies": {"0000:3b:00": {"role": "compute", "active": -1, "expected": 2}, "0000:5e:00": {"role": "storage", "active": 0, "expected": 1}},
  "saturated": {"mlx5_0:1:link_downed": "2025-01-01T00:00:00Z", "bad": "2025-01-01T00:00:00Z"},
  "disappeared": ["mlx5_5", "x y"]
}`)
	st, rep, err := LoadDetailed(path)
	if err != nil || rep.Status != LoadLoaded {
		t.Fatalf("LoadDetailed = %+v, %v", rep, err)
	}
	if st.BootID != bootA {
		t.Errorf("boot ID not normalised: %q", st.BootID)
	}
	keys := func(m any) []string {
		var out []string
		for _, k := range reflect.ValueOf(m).MapKeys() {
			out = append(out, k.String())
		}
		return sorted(out)
	}
	if got := keys(st.CounterSnapshots); !reflect.DeepEqual(got, []string{"mlx5_0:1:link_downed"}) {
		t.Errorf("snapshots kept = %v", got)
	}
	if got := keys(st.BreachFlags); !reflect.DeepEqual(got, []string{"mlx5_0:1:link_downed"}) {
		t.Errorf("breach flags kept = %v", got)
	}
	if got := keys(st.PortStates); !reflect.DeepEqual(got, []string{"mlx5_0_1", "mlx5_0_2"}) {
		t.Errorf("port states kept = %v", got)
	}
	if ps := st.PortStates["mlx5_0_2"]; ps.Device != "mlx5_0" || ps.Port != 2 {
		t.Errorf("port state not completed from its key: %+v", ps)
	}
	if !reflect.DeepEqual(st.KnownDevices, []string{"mlx5_0", "mlx5_1"}) {
		t.Errorf("known devices = %v", st.KnownDevices)
	}
	if got := keys(st.CardAnomalies); !reflect.DeepEqual(got, []string{"0000:5e:00"}) {
		t.Errorf("card anomalies kept = %v", got)
	}
	if got := keys(st.Saturated); !reflect.DeepEqual(got, []string{"mlx5_0:1:link_downed"}) {
		t.Errorf("saturated kept = %v", got)
	}
	if !reflect.DeepEqual(st.Disappeared, []string{"mlx5_5"}) {
		t.Errorf("disappeared = %v", st.Disappeared)
	}
	if len(rep.Dropped) != 14 {
		t.Errorf("dropped %d entries:\n%s", len(rep.Dropped), strings.Join(rep.Dropped, "\n"))
	}
	for _, want := range []string{`port_states["mlx5_0_3"]: negative port`, `counter_snapshots["mlx5_0:-1:link_downed"]: negative port`, `counter_snapshots["mlx5_0:1:symbol_error"]: no timestamp`} {
		if !contains(rep.Dropped, want) {
			t.Errorf("dropped list lacks %q:\n%s", want, strings.Join(rep.Dropped, "\n"))
		}
	}
}

func TestState_6_6_BadBootIDMakesStateFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, path, `{"version":1,"boot_id":"not-a-uuid","port_states":{"mlx5_0_1":{"state":"1: DOWN","device":"mlx5_0","port":1}}}`)
	st, rep, err := LoadDetailed(path)
	if err != nil || rep.Status != LoadLoaded || len(rep.Dropped) != 1 {
		t.Fatalf("LoadDetailed = %+v, %v", rep, err)
	}
	if got := ApplyBoot(st, bootA); got != BootFresh || len(st.PortStates) != 0 {
		t.Fatalf("ApplyBoot = %v, ports %v; want fresh and cleared", got, st.PortStates)
	}
}

func TestState_6_5_BootIDHandling(t *testing.T) {
	cases := []struct {
		name     string
		stored   string
		current  string
		want     BootStatus
		baseline bool
		cleared  bool
	}{
		{"first start, no state", "", bootA, BootFresh, true, true},
		{"host rebooted", bootA, bootB, BootRebooted, true, true},
		{"daemon restart same boot", bootA, bootA, BootSame, false, false},
		{"same boot, case differs", bootA, strings.ToUpper(bootA) + "\n", BootSame, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := sampleState()
			st.BootID = c.stored
			got := ApplyBoot(st, c.current)
			if got != c.want || got.Baseline() != c.baseline {
				t.Fatalf("ApplyBoot = %v (baseline %v); want %v (baseline %v)", got, got.Baseline(), c.want, c.baseline)
			}
			if st.BootID != strings.ToLower(strings.TrimSpace(c.current)) {
				t.Errorf("boot ID = %q", st.BootID)
			}
			empty := len(st.CounterSnapshots) == 0 && len(st.BreachFlags) == 0 && len(st.PortStates) == 0 &&
				len(st.KnownDevices) == 0 && len(st.CardAnomalies) == 0 && len(st.Saturated) == 0 && len(st.Disappeared) == 0
			if empty != c.cleared {
				t.Errorf("cleared = %v; want %v: %+v", empty, c.cleared, st)
			}
			if c.cleared && (st.CounterSnapshots == nil || st.PortStates == nil || st.KnownDevices == nil) {
				t.Errorf("cleared state has nil maps")
			}
		})
	}
	if ApplyBoot(nil, bootA) != BootFresh {
		t.Errorf("nil state")
	}
}

func TestState_6_5_ReadBootID(t *testing.T) {
	cases := []struct {
		name, content, want, errHas string
	}{
		{"kernel format", bootA + "\n", bootA, ""},
		{"upper case", strings.ToUpper(bootA), bootA, ""},
		{"empty", "", "", "not a UUID"},
		{"garbage", "hello", "", "not a UUID"},
		{"uuid without dashes", strings.ReplaceAll(bootA, "-", "") + "0000", "", "not a UUID"},
		{"huge", strings.Repeat("a", 1<<20), "", "not a UUID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boot_id")
			writeFile(t, path, c.content)
			got, err := ReadBootID(path)
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) || !strings.Contains(err.Error(), path) {
					t.Fatalf("ReadBootID = %q, %v; want error naming the file with %q", got, err, c.errHas)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ReadBootID = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := ReadBootID(missing); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--boot-id-path") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestState_6_6_SaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	want := sampleState()
	if err := Save(path, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat = %v, %v; want mode 0600", fi, err)
	}
	got, status, err := Load(path)
	if err != nil || status != LoadLoaded {
		t.Fatalf("Load = %v, %v", status, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	assertNoTemps(t, filepath.Dir(path))
}

func TestState_6_6_SaveOnlyWhenChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	s := NewStore(path)
	st := sampleState()
	steps := []struct {
		name   string
		mutate func()
		saved  bool
	}{
		{"first save", func() {}, true},
		{"unchanged", func() {}, false},
		{"counter advanced", func() {
			c := st.CounterSnapshots["mlx5_0:1:symbol_error"]
			c.Value++
			st.CounterSnapshots["mlx5_0:1:symbol_error"] = c
		}, true},
		{"unchanged again", func() {}, false},
		{"port recovered", func() {
			st.PortStates["mlx5_0_1"] = PortState{State: "4: ACTIVE", PhysicalState: "5: LinkUp", Device: "mlx5_0", Port: 1}
		}, true},
	}
	for _, step := range steps {
		step.mutate()
		saved, err := s.SaveIfChanged(st)
		if err != nil || saved != step.saved {
			t.Fatalf("%s: SaveIfChanged = %v, %v; want %v", step.name, saved, err, step.saved)
		}
	}
	// After a restart, an unchanged state is not rewritten either.
	s2 := NewStore(path)
	loaded, rep, err := s2.Load()
	if err != nil || rep.Status != LoadLoaded {
		t.Fatalf("Load = %+v, %v", rep, err)
	}
	if saved, err := s2.SaveIfChanged(loaded); saved || err != nil {
		t.Fatalf("SaveIfChanged after reload = %v, %v; want no write", saved, err)
	}
}

func TestState_6_6_SaveErrorLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	// A path whose parent is a regular file fails the same way for root and
	// for an unprivileged user (ENOTDIR).
	parent := filepath.Join(dir, "not-a-dir")
	writeFile(t, parent, "x")
	err := Save(filepath.Join(parent, "state.json"), sampleState())
	if err == nil || !strings.Contains(err.Error(), parent) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Save under a file = %v; want an error naming the path with a fix", err)
	}

	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(ro, "state.json")
		if err := Save(path, sampleState()); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		if err := os.Chmod(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(ro, 0o700)
		st := sampleState()
		st.KnownDevices = append(st.KnownDevices, "mlx5_9")
		err := Save(path, st)
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("Save into read-only dir = %v", err)
		}
		after, _ := os.ReadFile(path)
		if string(before) != string(after) {
			t.Fatalf("old file changed")
		}
	} else {
		saveIntoImmutableDir(t, dir)
	}
}

// saveIntoImmutableDir is the read-only-directory case for root, whom a
// chmod cannot stop: an immutable directory (chattr +i) refuses root too.
func saveIntoImmutableDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("chattr"); err != nil {
		component.Missing(t, "chattr not installed (apt-get install e2fsprogs): cannot deny root a directory")
	}
	ro := filepath.Join(dir, "immutable")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ro, "state.json")
	if err := Save(path, sampleState()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if out, err := exec.Command("chattr", "+i", ro).CombinedOutput(); err != nil {
		component.Missing(t, "cannot make %s immutable (chattr needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs): %v %s", ro, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", ro).Run() })
	st := sampleState()
	st.KnownDevices = append(st.KnownDevices, "mlx5_9")
	err := Save(path, st)
	if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), ro) {
		t.Fatalf("Save into an immutable dir = %v; want permission denied naming %s", err, ro)
	}
	if after, _ := os.ReadFile(path); string(before) != string(after) {
		t.Fatalf("old file changed")
	}
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), tempInfix) {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bigState is the largest realistic state: 13 ports with 14 counters each.
func bigState() *State {
	ts := time.Date(2025, 6, 15, 10, 30, 0, 0, time.UTC)
	st := NewState(bootA)
	counters := []string{"link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
		"port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
		"excessive_buffer_overrun_errors", "port_xmit_wait", "rnr_nak_retry_err", "roce_slow_restart"}
	for d := 0; d < 13; d++ {
		dev := fmt.Sprintf("mlx5_%d", d)
		st.KnownDevices = append(st.KnownDevices, dev)
		st.PortStates[dev+"_1"] = PortState{State: "4: ACTIVE", PhysicalState: "5: LinkUp", Device: dev, Port: 1, LinkLayer: "InfiniBand"}
		for i, c := range counters {
			st.CounterSnapshots[fmt.Sprintf("%s:1:%s", dev, c)] = CounterSnapshot{Value: uint64(d*1000 + i), Timestamp: ts}
		}
	}
	return st
}
