package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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
// down port, a velocity snapshot and a card anomaly, each in its check's
// section (persist treats sections as opaque JSON).
func sampleState() *State {
	st := NewState(bootA)
	st.SetSection("counters", []byte(`{"version":1,"counter_snapshots":{"mlx5_0:1:link_downed":{"value":3,"timestamp":"2025-06-15T10:30:00Z"},`+
		`"mlx5_0:1:symbol_error":{"value":1500000,"timestamp":"2025-06-15T10:30:00Z"}},`+
		`"breach_flags":{"mlx5_0:1:link_downed":{"breached":true,"check_name":"InfiniBandDegradationCheck","is_fatal":true,"since":"2025-06-15T10:25:00Z","definition":"delta>0"}},`+
		`"saturated":{"mlx5_1:1:port_xmit_wait":"2025-06-15T10:30:00Z"}}`))
	st.SetSection("ports", []byte(`{"version":1,"port_states":{"mlx5_0_1":{"state":"1: DOWN","physical_state":"3: Disabled","device":"mlx5_0","port":1,"link_layer":"InfiniBand"},`+
		`"mlx5_1_1":{"state":"4: ACTIVE","physical_state":"5: LinkUp","device":"mlx5_1","port":1,"link_layer":"InfiniBand"}},`+
		`"known_devices":["mlx5_0","mlx5_1"],"disappeared":["mlx5_7"]}`))
	st.SetSection("cards", []byte(`{"version":1,"card_anomalies":{"0000:3b:00":{"role":"compute","active":0,"expected":1,"since":"2025-06-15T10:30:00Z"}}}`))
	st.OutboxSeq = 42
	return st
}

// section decodes one section of st as a generic map.
func section(t *testing.T, st *State, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if raw := st.Section(name); raw != nil {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("section %s: %v", name, err)
		}
	}
	return m
}

func TestState_6_6_MissingFileIsFresh(t *testing.T) {
	st, status, err := Load(filepath.Join(t.TempDir(), "state.json"))
	if err != nil || status != LoadFresh {
		t.Fatalf("Load = %v, %v; want LoadFresh, nil", status, err)
	}
	if st.Checks == nil || len(st.Checks) != 0 {
		t.Fatalf("fresh state sections: %+v", st.Checks)
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
	// Version 1 is migrated: each check's keys, unchanged, in its section.
	if st.Version != SchemaVersion {
		t.Errorf("version %d, want %d", st.Version, SchemaVersion)
	}
	c := section(t, st, "counters")
	snap, _ := c["counter_snapshots"].(map[string]any)["mlx5_2:1:link_downed"].(map[string]any)
	flag, _ := c["breach_flags"].(map[string]any)["mlx5_2:1:link_downed"].(map[string]any)
	if snap["value"] != 7.0 || flag["breached"] != true || c["version"] != 1.0 {
		t.Errorf("counters section = %v", c)
	}
	p := section(t, st, "ports")
	ps, _ := p["port_states"].(map[string]any)["mlx5_2_1"].(map[string]any)
	if ps["physical_state"] != "2: Polling" || !reflect.DeepEqual(p["known_devices"], []any{"mlx5_2", "mlx5_3"}) {
		t.Errorf("ports section = %v", p)
	}
	if st.Section("cards") != nil || st.Section("sanity") != nil {
		t.Errorf("sections for keys the file did not have: %v", st.Checks)
	}
}

func TestState_6_6_VersionZeroOrMissingIsOne(t *testing.T) {
	for _, body := range []string{`{}`, `{"version":0}`, `{"version":null}`, `{"version":1}`} {
		path := filepath.Join(t.TempDir(), "state.json")
		writeFile(t, path, body)
		st, status, err := Load(path)
		if err != nil || status != LoadLoaded || st.Version != SchemaVersion {
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
		{"wrong types", `{"version":2,"checks":"oops"}`, "state schema"},
		{"wrong types, version 1", `{"version":1,"boot_id":5}`, "state schema"},
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
			if st == nil || st.BootID != "" || len(st.Checks) != 0 || st.Checks == nil {
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
		{"incompatible fields", `{"version":3,"checks":[1,2,3]}`},
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
	want := "state file /var/lib/nichealthd/state.json has schema version 3, newer than this nichealthd understands (2); refusing to overwrite it: upgrade nichealthd or move the file away"
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

// The envelope is validated here; each check validates its own section
// when the daemon restores it (daemon's TestState_6_6_ValidationDropsBadEntries).
func TestState_6_6_EnvelopeValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, path, `{"version":2,"boot_id":"`+strings.ToUpper(bootA)+`","checks":{"ports":{"version":1},"counters":[1,2],"cards":"x"}}`)
	st, rep, err := LoadDetailed(path)
	if err != nil || rep.Status != LoadLoaded {
		t.Fatalf("LoadDetailed = %+v, %v", rep, err)
	}
	if st.BootID != bootA {
		t.Errorf("boot ID not normalised: %q", st.BootID)
	}
	if st.Section("ports") == nil || st.Section("counters") != nil || st.Section("cards") != nil {
		t.Errorf("sections kept = %v", st.Checks)
	}
	if len(rep.Dropped) != 2 || !contains(rep.Dropped, `checks["counters"]: not a JSON object`) {
		t.Errorf("dropped = %v", rep.Dropped)
	}
}

func TestState_6_6_BadBootIDMakesStateFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	writeFile(t, path, `{"version":1,"boot_id":"not-a-uuid","port_states":{"mlx5_0_1":{"state":"1: DOWN","device":"mlx5_0","port":1}}}`)
	st, rep, err := LoadDetailed(path)
	if err != nil || rep.Status != LoadLoaded || len(rep.Dropped) != 1 {
		t.Fatalf("LoadDetailed = %+v, %v", rep, err)
	}
	if got := ApplyBoot(st, bootA); got != BootFresh || len(st.Checks) != 0 {
		t.Fatalf("ApplyBoot = %v, sections %v; want fresh and cleared", got, st.Checks)
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
			empty := len(st.Checks) == 0 && st.Health == nil
			if empty != c.cleared {
				t.Errorf("cleared = %v; want %v: %+v", empty, c.cleared, st)
			}
			if st.OutboxSeq != 42 {
				t.Errorf("outbox sequence %d not kept across the clear", st.OutboxSeq)
			}
			if c.cleared && st.Checks == nil {
				t.Errorf("cleared state has a nil section map")
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
	// Sections are written indented: compare their content, not layout.
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var gb, wb bytes.Buffer
	json.Compact(&gb, g)
	json.Compact(&wb, w)
	if gb.String() != wb.String() {
		t.Fatalf("round trip:\n got %s\nwant %s", gb.String(), wb.String())
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
			st.SetSection("counters", []byte(`{"version":1,"counter_snapshots":{"mlx5_0:1:symbol_error":{"value":1500001,"timestamp":"2025-06-15T10:30:01Z"}}}`))
		}, true},
		{"unchanged again", func() {}, false},
		{"port recovered", func() {
			st.SetSection("ports", []byte(`{"version":1,"port_states":{"mlx5_0_1":{"state":"4: ACTIVE","physical_state":"5: LinkUp","device":"mlx5_0","port":1}}}`))
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
		st.OutboxSeq++
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
	st.OutboxSeq++
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
	st := NewState(bootA)
	counters := []string{"link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
		"port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
		"excessive_buffer_overrun_errors", "port_xmit_wait", "rnr_nak_retry_err", "roce_slow_restart"}
	var ports, snaps, known []string
	for d := 0; d < 13; d++ {
		dev := fmt.Sprintf("mlx5_%d", d)
		known = append(known, fmt.Sprintf("%q", dev))
		ports = append(ports, fmt.Sprintf(`"%s_1":{"state":"4: ACTIVE","physical_state":"5: LinkUp","device":%q,"port":1,"link_layer":"InfiniBand"}`, dev, dev))
		for i, c := range counters {
			snaps = append(snaps, fmt.Sprintf(`"%s:1:%s":{"value":%d,"timestamp":"2025-06-15T10:30:00Z"}`, dev, c, d*1000+i))
		}
	}
	st.SetSection("ports", []byte(`{"version":1,"port_states":{`+strings.Join(ports, ",")+`},"known_devices":[`+strings.Join(known, ",")+`]}`))
	st.SetSection("counters", []byte(`{"version":1,"counter_snapshots":{`+strings.Join(snaps, ",")+`}}`))
	return st
}
