package counters

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// A NIC renamed under the same PCI address keeps its windows, latches,
// saturations, congestion and the checks they were raised under, and
// nothing stays behind under the old name (it would never clear).
func TestMemory_RenameMovesEveryEntryOfTheDevice(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	m := NewMemory()
	for _, dev := range []string{"mlx5_0", "mlx5_1"} {
		k := Key(dev, 1, "symbol_error")
		m.CounterSnapshots[k] = CounterSnapshot{Value: 1, Timestamp: at}
		m.BreachFlags[k] = BreachFlag{Breached: true, CheckName: "InfiniBandDegradationCheck", Since: at}
		m.Saturated[k], m.Congested[k] = at, at
		m.raisedUnder(k, "InfiniBandDegradationCheck")
	}
	m.Rename("mlx5_0", "ib0")
	want := []string{"ib0:1:symbol_error", "mlx5_1:1:symbol_error"}
	for name, keys := range map[string][]string{
		"counter_snapshots": slices.Sorted(maps.Keys(m.CounterSnapshots)), "breach_flags": slices.Sorted(maps.Keys(m.BreachFlags)),
		"saturated": slices.Sorted(maps.Keys(m.Saturated)), "congested": slices.Sorted(maps.Keys(m.Congested)),
		"raised_under": slices.Sorted(maps.Keys(m.RaisedUnder)),
	} {
		if !slices.Equal(keys, want) {
			t.Errorf("%s after the rename: %q, want %q", name, keys, want)
		}
	}
}
