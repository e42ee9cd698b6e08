package latch

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestSet_RaiseClearHas(t *testing.T) {
	var s Set[string, time.Time] // nil, as a section read back without it
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s.Raise("devlink:fw_fatal", at)
	if !s.Has("devlink:fw_fatal") || s["devlink:fw_fatal"] != at {
		t.Fatalf("raised %v", s)
	}
	if !s.Clear("devlink:fw_fatal") || s.Has("devlink:fw_fatal") || len(s) != 0 {
		t.Fatalf("cleared %v", s)
	}
	if s.Clear("devlink:fw_fatal") {
		t.Fatal("a clear of what is not raised reports it was")
	}
}

func TestSet_KeysAreInTheStateFilesOrder(t *testing.T) {
	s := Set[Port, int]{PortOf("mlx5_2", 1): 0, PortOf("mlx5_10", 2): 0, PortOf("mlx5_0", 1): 0, PortOf("mlx5_0", 2): 0}
	want := []Port{PortOf("mlx5_0", 1), PortOf("mlx5_0", 2), PortOf("mlx5_10", 2), PortOf("mlx5_2", 1)}
	if got := s.Keys(); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	n := Set[string, int]{"b": 0, "a": 0, "c": 0}
	if got := n.Keys(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("keys %v", got)
	}
}

// Keep drops, in key order, what its rule refuses, names each, and leaves
// the rest; a bound counts what is left.
func TestSet_KeepDropsAndNamesWhatNoCheckWrote(t *testing.T) {
	var bad Port
	_ = bad.UnmarshalText([]byte("mlx5_0/0"))
	s := Set[Port, int]{PortOf("a", 1): 1, PortOf("b", 1): -1, PortOf("c", 1): 1, PortOf("d", 1): 1, bad: 1}
	dropped := s.Keep("ports", func(k Port, v int) string {
		switch {
		case !k.Valid():
			return "not DEVICE/PORT"
		case v < 0:
			return "negative"
		case len(s) > 2:
			return "over the bound of 2 ports"
		}
		return ""
	})
	// a (5 left), b, c (3 left), d stays (2 left), then the bad key.
	want := []string{`ports["a/1"]: over the bound of 2 ports`, `ports["b/1"]: negative`, `ports["c/1"]: over the bound of 2 ports`, `ports["mlx5_0/0"]: not DEVICE/PORT`}
	if !slices.Equal(dropped, want) || len(s) != 1 || !s.Has(PortOf("d", 1)) {
		t.Fatalf("dropped %q, left %v", dropped, s)
	}
}

func TestSet_RekeyMovesARenamedDevicesEntries(t *testing.T) {
	s := Set[Port, string]{PortOf("mlx5_0", 1): "a", PortOf("mlx5_0", 2): "b", PortOf("mlx5_1", 1): "c"}
	s.Rekey(func(p Port) (Port, bool) { return p.Renamed("mlx5_0", "ib0") })
	want := Set[Port, string]{PortOf("ib0", 1): "a", PortOf("ib0", 2): "b", PortOf("mlx5_1", 1): "c"}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Fatalf("rekeyed %v, want %v", s, want)
	}
}

func TestSet_KeepKeysDropsTheKeysTheRuleRefuses(t *testing.T) {
	s := Set[string, bool]{"module:temperature": true, "bogus": true, "module:rxLOS": false}
	dropped := s.KeepKeys("transceiver.ports[\"mlx5_4_1\"].raised", "unknown finding", func(k string) bool { return len(k) > 7 && k[:7] == "module:" })
	if !slices.Equal(dropped, []string{`transceiver.ports["mlx5_4_1"].raised["bogus"]: unknown finding`}) || len(s) != 2 {
		t.Fatalf("dropped %q, left %v", dropped, s)
	}
}

// Every raise gets its clear: what the cycle no longer finds is cleared in
// key order with what its raise recorded, and forgotten.
func TestSet_SweepClearsWhatIsNoLongerFoundWithWhatItsRaiseSaid(t *testing.T) {
	s := Set[string, string]{"rate|mlx5_1|1": "slow", "gid|mlx5_0|1": "no GID", "rate|mlx5_0|1": "slow too"}
	var cleared []string
	n := s.Sweep(func(k string) bool { return k == "rate|mlx5_0|1" }, func(k, v string) { cleared = append(cleared, k+"="+v) })
	if n != 2 || !slices.Equal(cleared, []string{"gid|mlx5_0|1=no GID", "rate|mlx5_1|1=slow"}) || len(s) != 1 || !s.Has("rate|mlx5_0|1") {
		t.Fatalf("swept %d %q, left %v", n, cleared, s)
	}
}

func TestSet_AllIsInKeyOrderAndSeesClearsMadeOnTheWay(t *testing.T) {
	s := Set[Port, int]{PortOf("mlx5_2", 1): 2, PortOf("mlx5_10", 1): 10, PortOf("mlx5_0", 1): 0}
	var got []string
	for k, v := range s.All() {
		got = append(got, fmt.Sprint(k, "=", v))
		s.Clear(PortOf("mlx5_2", 1))
	}
	if !slices.Equal(got, []string{"mlx5_0/1=0", "mlx5_10/1=10"}) {
		t.Fatalf("all: %q", got)
	}
}
