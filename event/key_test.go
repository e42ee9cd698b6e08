package event

import (
	"testing"

	"github.com/nichealth/nichealthd/event/condition"
)

// An event carries the key its check set, its strings cleaned like every
// identifier of the event; without one, KeyOf derives it from the event's
// kind, entities and metadata (records written before events carried
// keys), and the two agree.
func TestEvent_CarriesItsConditionKey(t *testing.T) {
	s := Spec{Kind: KindCounterBreach, CheckName: InfiniBandDegradationCheck, IsFatal: true, Device: "mlx5_0\xff", Port: 1,
		ErrorCode: []string{"link_downed"}, Metadata: map[string]string{"counter": "link_downed"},
		Condition: condition.OfCounter("mlx5_0\xff", 1, "link_downed")}
	e := New(s, Stamp{})
	want := condition.Key{Check: InfiniBandDegradationCheck, Entity: condition.OfCounter(`mlx5_0\xff`, 1, "link_downed")}
	if k, ok := KeyOf(&e); !ok || k != want || e.Condition != want {
		t.Fatalf("key %+v (%v), event's %+v, want %+v", k, ok, e.Condition, want)
	}
	s.Condition = condition.Entity{}
	old := New(s, Stamp{})
	if old.Condition.Known() {
		t.Fatalf("New made up a key: %+v", old.Condition)
	}
	if k, ok := KeyOf(&old); !ok || k != want {
		t.Fatalf("derived key %+v (%v), want %+v", k, ok, want)
	}
	noFile := New(Spec{Kind: KindReadStuck, CheckName: InfiniBandDegradationCheck, Device: "mlx5_0", Port: 1}, Stamp{})
	if _, ok := KeyOf(&noFile); ok {
		t.Fatal("a hung-read event without its file has a key")
	}
}

// DESIGN.md difference 2: a port's folded counter baselines under the
// state check (its fatal counters) never take the port's own key, which
// is its link state's condition under that check: a healthy baseline
// must not clear a port DOWN. Written by this build (Spec.Condition) and
// replayed from the outbox (no key stored) alike.
func TestKeyOf_Design2_FoldedBaselineIsNotThePortsCondition(t *testing.T) {
	port := condition.Key{Check: InfiniBandStateCheck, Entity: condition.OfPort("mlx5_0", 1)}
	e := New(Spec{Kind: KindCounterBaseline, CheckName: InfiniBandStateCheck, IsHealthy: true, Device: "mlx5_0", Port: 1,
		ErrorCode: []string{"link_downed", "symbol_error_fatal"}, Metadata: map[string]string{"counters": "link_downed,symbol_error_fatal"},
		Condition: condition.OfCounter("mlx5_0", 1, FoldedBaselineName)}, Stamp{})
	k, ok := KeyOf(&e)
	if !ok || k == port {
		t.Fatalf("written: key %v", k)
	}
	e.Condition = condition.Key{}
	legacy, ok := KeyOf(&e)
	if !ok || legacy == port || legacy != k {
		t.Fatalf("replayed: key %v, written %v", legacy, k)
	}
}
