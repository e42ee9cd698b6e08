package outbox

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// The fold key is the condition's key, the one the health model holds
// the event under: two slow PCIe hops of one kind above the same NICs are
// two conditions (their events name the same ports and the same kind), so
// neither folds the other at the size bound, whether the event carries
// its key or is an older record whose key is derived; a raise and the
// clear of the same hop fold together.
func TestOutbox_FoldKeyIsTheConditionKey_PCIeHops(t *testing.T) {
	hop := func(addr string, healthy, keyed bool) *event.Event {
		s := event.Spec{Kind: event.KindLinkSanity, CheckName: event.InfiniBandDegradationCheck, IsHealthy: healthy,
			ErrorCode: []string{"pcie-path-width"}, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}, {Device: "mlx5_1", Port: 1}},
			Metadata: map[string]string{"pciHop": addr, "finding": "pcie-path-width"}}
		if healthy {
			s.Kind = event.KindLinkSanityOK
		}
		if keyed {
			s.Condition = condition.OfPCI(addr, "pcie-path-width")
		}
		e := event.New(s, event.Stamp{})
		return &e
	}
	for _, keyed := range []bool{true, false} {
		a, b := FoldKey(hop("0000:17:00.0", false, keyed)), FoldKey(hop("0000:14:00.0", false, keyed))
		if a == b {
			t.Errorf("keyed %v: two hops above the same NICs share a fold key", keyed)
		}
		if c := FoldKey(hop("0000:17:00.0", true, keyed)); c != a {
			t.Errorf("keyed %v: a hop's clear does not fold its raise", keyed)
		}
	}
	if FoldKey(hop("0000:17:00.0", false, true)) != FoldKey(hop("0000:17:00.0", false, false)) {
		t.Error("a record written before events carried their key folds apart from a new one")
	}
}

// An event's key survives the outbox: a record read back carries the key
// its check set, not one derived again.
func TestOutbox_RecordKeepsTheConditionKey(t *testing.T) {
	o := mustOpen(t, t.TempDir(), Options{Sinks: []string{"a"}})
	defer o.Close()
	ev := event.New(event.Spec{Kind: event.KindReadStuck, CheckName: event.InfiniBandDegradationCheck, Device: "mlx5_0", Port: 1,
		Metadata: map[string]string{"file": "/x/a"}, Condition: condition.OfFile("mlx5_0", 1, "/x/a")}, event.Stamp{})
	mustAppend(t, o, []event.Event{ev})
	o.Close()
	o = mustOpen(t, o.Dir(), Options{Sinks: []string{"a"}})
	defer o.Close()
	recs := readAll(t, o, "a")
	if len(recs) != 1 || recs[0].Event.Condition != ev.Condition || !ev.Condition.Known() {
		t.Fatalf("records %+v, want the key %+v", recs, ev.Condition)
	}
}
