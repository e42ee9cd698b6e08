package runner

import (
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/cards"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/ports"
	"github.com/nichealth/nichealthd/checks/sanity"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/persist"
)

// TestState_6_6_ValidationDropsBadEntries: a version 1 state file (the
// seed's flat layout) is migrated into sections, and each check drops the
// entries it could not have written, one bad entry costing that entry.
func TestState_6_6_ValidationDropsBadEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	body := `{
  "version": 1,
  "boot_id": "0B7D5A6E-3F1C-4E2A-9D8B-5C4A3B2A1F00",
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
  "disappeared": ["mlx5_5", "x y"],
  "sanity": {"pcie-width|mlx5_0|0": "x8", "nonsense": "y"}
}`
	if err := persist.WriteFileAtomic(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	st, rep, err := persist.LoadDetailed(path)
	if err != nil || rep.Status != persist.LoadLoaded || len(rep.Dropped) != 0 {
		t.Fatalf("LoadDetailed = %+v, %v", rep, err)
	}
	if st.BootID != "0b7d5a6e-3f1c-4e2a-9d8b-5c4a3b2a1f00" {
		t.Errorf("boot ID not normalised: %q", st.BootID)
	}
	r, mem, dropped := restoreMemory(t, st)
	keys := func(m any) []string {
		var out []string
		for _, k := range reflect.ValueOf(m).MapKeys() {
			out = append(out, k.String())
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct {
		what string
		got  []string
		want []string
	}{
		{"snapshots", keys(mem.Counters.CounterSnapshots), []string{"mlx5_0:1:link_downed"}},
		{"breach flags", keys(mem.Counters.BreachFlags), []string{"mlx5_0:1:link_downed"}},
		{"saturated", keys(mem.Counters.Saturated), []string{"mlx5_0:1:link_downed"}},
		{"port states", keys(mem.Ports.PortStates), []string{"mlx5_0_1", "mlx5_0_2"}},
		{"known devices", mem.Ports.KnownDevices, []string{"mlx5_0", "mlx5_1"}},
		{"disappeared", mem.Ports.Disappeared, []string{"mlx5_5"}},
		{"card anomalies", keys(mem.Cards.Anomalies), []string{"0000:5e:00"}},
		{"sanity", keys(mem.Sanity.Reported), []string{"pcie-width|mlx5_0|0"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s kept = %v, want %v", c.what, c.got, c.want)
		}
	}
	if ps := mem.Ports.PortStates["mlx5_0_2"]; ps.Device != "mlx5_0" || ps.Port != 2 {
		t.Errorf("port state not completed from its key: %+v", ps)
	}
	if len(dropped) != 15 {
		t.Errorf("dropped %d entries:\n%s", len(dropped), strings.Join(dropped, "\n"))
	}
	for _, want := range []string{`port_states["mlx5_0_3"]: negative port`, `counter_snapshots["mlx5_0:-1:link_downed"]: negative port`,
		`counter_snapshots["mlx5_0:1:symbol_error"]: no timestamp`, `sanity["nonsense"]: key is not <kind>|<device>|<port>`} {
		if !slices.Contains(dropped, want) {
			t.Errorf("dropped list lacks %q:\n%s", want, strings.Join(dropped, "\n"))
		}
	}

	// Saved again, the file is version 2 with one section per check, and
	// restores to the same memory.
	if err := storeMemory(st, r); err != nil {
		t.Fatal(err)
	}
	if err := persist.Save(path, st); err != nil {
		t.Fatal(err)
	}
	st2, _, err := persist.LoadDetailed(path)
	if err != nil || st2.Version != persist.SchemaVersion {
		t.Fatalf("reload: %v version %d", err, st2.Version)
	}
	_, mem2, dropped2 := restoreMemory(t, st2)
	if len(dropped2) != 0 || !reflect.DeepEqual(mem2, mem) {
		t.Errorf("round trip: dropped %v\n got %+v\nwant %+v", dropped2, mem2, mem)
	}
}

// A section written by a newer version of its check, or unreadable,
// starts that check fresh and leaves the others as they were.
func TestState_6_6_NewerOrBrokenSectionStartsThatCheckFresh(t *testing.T) {
	st := persist.NewState("")
	st.SetSection("counters", []byte(`{"version":9,"breach_flags":{"mlx5_0:1:link_downed":{"breached":true}}}`))
	st.SetSection("cards", []byte(`{"version":1,"card_anomalies":"oops"}`))
	st.SetSection("ports", []byte(`{"version":1,"known_devices":["mlx5_0"]}`))
	_, mem, dropped := restoreMemory(t, st)
	if len(mem.Counters.BreachFlags) != 0 || len(mem.Cards.Anomalies) != 0 || !slices.Equal(mem.Ports.KnownDevices, []string{"mlx5_0"}) {
		t.Fatalf("memory %+v %+v %+v", mem.Counters, mem.Cards, mem.Ports)
	}
	if len(dropped) != 2 || !strings.Contains(strings.Join(dropped, "\n"), `checks["counters"]: version 9 is newer`) {
		t.Errorf("dropped %v", dropped)
	}
	if mem.Cards.Anomalies == nil || mem.Counters.BreachFlags == nil {
		t.Error("a fresh section has nil maps")
	}
}

// memory is what every check remembers, as the state file holds it.
type memory struct {
	Ports    *ports.PortMemory
	Counters *counters.Memory
	Cards    *cards.Memory
	Sanity   *sanity.Memory
	AER      *aer.Memory
}

// restoreMemory is a runner (not discovered: nothing read) whose checks
// restored their memory from st, that memory, and what they dropped.
func restoreMemory(t *testing.T, st *persist.State) (*Runner, memory, []string) {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "config.toml"), []byte("nodeName = \"t\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := New(cfg, observe.BootSame, "boot", slog.New(slog.DiscardHandler), Seams{}, health.NewModel())
	t.Cleanup(r.Close)
	dropped := r.Restore(func(s string) []byte { return st.Section(s) })
	return r, memory{Ports: r.set.ports.Memory(), Counters: r.set.counters.Memory(), Cards: r.set.cards.Memory(),
		Sanity: r.set.sanity.Memory(), AER: r.set.aer.Memory()}, dropped
}
