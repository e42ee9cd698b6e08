package counters

import (
	"slices"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
)

// TestCounters_11_1_SeedPin_CheckNames pins seed 11.1's three example
// events: a fatal link_downed under InfiniBandStateCheck, a non-fatal
// symbol_error under InfiniBandDegradationCheck, the recovery of the
// link_downed breach under InfiniBandStateCheck; all with the counter as
// their error code.
func TestCounters_11_1_SeedPin_CheckNames(t *testing.T) {
	r := newRig(t)
	ld, se := def("link_downed"), def("symbol_error")
	r.none(ld, 0)
	r.none(se, 0)
	fatal := r.at(5*time.Second).one(ld, 1)
	nonFatal := r.at(5*time.Second).one(se, 100)
	recovery := r.at(10*time.Second).one(ld, 0)
	for _, c := range []struct {
		got         event.Spec
		check, code string
	}{{fatal, "InfiniBandStateCheck", "link_downed"}, {nonFatal, "InfiniBandDegradationCheck", "symbol_error"}, {recovery, "InfiniBandStateCheck", "link_downed"}} {
		if c.got.CheckName != c.check || !slices.Equal(c.got.ErrorCode, []string{c.code}) {
			t.Errorf("%s %s: check %q codes %v, want %q [%s]", c.got.Kind, c.code, c.got.CheckName, c.got.ErrorCode, c.check, c.code)
		}
	}
	if !fatal.IsFatal || nonFatal.IsFatal || !recovery.IsHealthy {
		t.Fatalf("severities: %+v %+v %+v", fatal, nonFatal, recovery)
	}
}

// oldMemory is the counter section a build before seed 11.1's naming
// saved: fatal latches under the degradation checks.
func oldMemory() *Memory {
	m := NewMemory()
	at := t0.Add(-time.Hour)
	m.BreachFlags[Key("mlx5_1", 1, "link_downed")] = BreachFlag{Breached: true, CheckName: event.InfiniBandDegradationCheck, IsFatal: true, Since: at}
	m.BreachFlags[Key("mlx5_8", 1, "link_downed")] = BreachFlag{Breached: true, CheckName: event.EthernetDegradationCheck, IsFatal: true, Since: at}
	m.BreachFlags[Key("mlx5_2", 1, "symbol_error")] = BreachFlag{Breached: true, CheckName: event.InfiniBandDegradationCheck, Since: at}
	m.BreachFlags[Key("mlx5_3", 1, "link_downed")] = BreachFlag{Breached: true, CheckName: event.InfiniBandStateCheck, IsFatal: true, Since: at}
	m.CounterSnapshots[Key("mlx5_1", 1, "link_downed")] = CounterSnapshot{Value: 7, Timestamp: at}
	return m
}

// DESIGN.md difference 2 (as revised) after an upgrade: the fatal latches
// an older build raised under a degradation check are each cleared there
// (entities and the counter as error code: never a check-scoped clear,
// which would also erase the other conditions the degradation names
// carry) and raised again under the state check of their NIC type, once:
// the flag then says the new name. Non-fatal latches and latches already
// under a state check stay.
func TestDesign_2_FatalLatchesMoveToTheStateCheckOnce(t *testing.T) {
	c := NewCheck(nil, false)
	c.Configure(Config{Enabled: true, Table: countertable.Defaults()})
	*c.mem = *oldMemory()
	specs := c.Resume()
	type move struct{ kind, check, device, code string }
	var got []move
	for _, s := range specs {
		got = append(got, move{string(s.Kind), s.CheckName, s.Device, s.ErrorCode[0]})
		if s.Kind == event.KindCounterRecovered && (len(s.ErrorCode) != 1 || s.Device == "" || s.Port != 1 || !s.IsHealthy || s.Metadata["reason"] != ReasonCheckRenamed) {
			t.Fatalf("the clear under the old name is not scoped to its breach: %+v", s)
		}
		if s.Kind == event.KindCounterBreach && (!s.IsFatal || s.Metadata["breachedSince"] != t0.Add(-time.Hour).Format(time.RFC3339)) {
			t.Fatalf("raise under the new name %+v", s)
		}
	}
	want := []move{
		{"counter-recovered", "InfiniBandDegradationCheck", "mlx5_1", "link_downed"},
		{"counter-breach", "InfiniBandStateCheck", "mlx5_1", "link_downed"},
		{"counter-recovered", "EthernetDegradationCheck", "mlx5_8", "link_downed"},
		{"counter-breach", "EthernetStateCheck", "mlx5_8", "link_downed"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("moves %v, want %v", got, want)
	}
	for k, want := range map[string]string{
		Key("mlx5_1", 1, "link_downed"):  "InfiniBandStateCheck",
		Key("mlx5_8", 1, "link_downed"):  "EthernetStateCheck",
		Key("mlx5_2", 1, "symbol_error"): "InfiniBandDegradationCheck",
		Key("mlx5_3", 1, "link_downed"):  "InfiniBandStateCheck",
	} {
		if fl := c.mem.BreachFlags[k]; fl.CheckName != want || !fl.Breached || !fl.Since.Equal(t0.Add(-time.Hour)) {
			t.Fatalf("%s after the move: %+v, want under %s since the breach", k, fl, want)
		}
	}
	if again := c.Resume(); len(again) != 0 {
		t.Fatalf("moved twice: %+v", again)
	}

	// The daemon stopped after the events were in the outbox and before
	// the state file had the move: the old memory, replayed, ends where
	// the move left it, and moves nothing again.
	r := NewCheck(nil, false)
	r.Configure(Config{Enabled: true, Table: countertable.Defaults()})
	*r.mem = *oldMemory()
	for i, s := range specs {
		e := event.New(s, event.Stamp{NodeName: "n", Now: t0.Add(time.Duration(i) * time.Millisecond)})
		r.Replay(&e)
	}
	for k, fl := range c.mem.BreachFlags {
		got := r.mem.BreachFlags[k]
		if got.CheckName != fl.CheckName || !got.Since.Equal(fl.Since) || got.Breached != fl.Breached || got.IsFatal != fl.IsFatal {
			t.Fatalf("%s replayed: %+v, want %+v", k, got, fl)
		}
	}
	if again := r.Resume(); len(again) != 0 {
		t.Fatalf("moved again after the replay: %+v", again)
	}
	if snap := r.mem.CounterSnapshots[Key("mlx5_1", 1, "link_downed")]; snap.Value != 7 {
		t.Fatalf("the replayed move lost the latched counter's snapshot: %+v", snap)
	}
}
