package farend

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/internal/nodecondition"
	"github.com/nichealth/nichealthd/mad/wire"
)

// DESIGN.md difference 13 on the far end's codes: the fatal conditions
// NVSentinel holds after replaying the stream (its node-condition rule,
// internal/nodecondition) equal the daemon's own (the health model), at
// every event. The far end's events are all non-fatal; its healthy ones
// (recoveries, acknowledgements of peer:<row>, peer-saturated:<field>
// and peer:unstable, and the witness of a local episode) are scoped to
// its check, its port and its code, so none may clear the local fatal
// link_downed of the same port; a witness clears nothing at all in the
// model, and a restarted check's Replay of the stream leaves it holding
// what the model holds.
func TestDesign_13_NVSentinelReplayOfTheFarEndsCodes(t *testing.T) {
	h := newHarness(t, "")
	nvs, model := nodecondition.New(), health.NewModel()
	var stream []event.Event
	apply := func(step string, specs []event.Spec) {
		t.Helper()
		for _, sp := range specs {
			e := event.New(sp, event.Stamp{NodeName: "n", Now: h.at})
			stream = append(stream, e)
			before := model.Conditions()
			nvs.Apply(nvsEvent(e))
			model.Apply(&e)
			if e.Metadata["reason"] == "local-episode" && !slices.EqualFunc(before, model.Conditions(), func(a, b health.Condition) bool { return a.Key() == b.Key() }) {
				t.Fatalf("%s: the witness %q changed the model", step, e.Message)
			}
			var fatal []string
			for _, c := range model.Conditions() {
				if c.Severity == health.Fatal {
					fatal = append(fatal, nodecondition.Message(nvsEvent(e0(stream, c.EventID))))
				}
			}
			slices.Sort(fatal)
			var held []string
			for _, c := range nvs.Checks() {
				held = append(held, nvs.Messages(c)...)
			}
			slices.Sort(held)
			if !slices.Equal(fatal, held) {
				t.Fatalf("%s, after %s %v: NVSentinel holds %q, the daemon %q", step, e.Kind, e.ErrorCode, held, fatal)
			}
		}
	}
	// The local port's fatal link_downed (the state check), raised first.
	apply("local link_downed", []event.Spec{{Kind: event.KindCounterBreach, CheckName: event.InfiniBandStateCheck, IsFatal: true,
		Device: "mlx5_0", Port: 1, ErrorCode: []string{"link_downed"}, Message: "Port mlx5_0 port 1: link_downed - Port Training State Machine failed - QP disconnect (value=1, delta=1, rate=0.02/sec)",
		Condition: condition.OfCounter("mlx5_0", 1, "link_downed")}})
	apply("baseline", h.read(0, leaf1, nil))
	apply("breach and saturation", h.read(time.Minute, leaf1, func(c *wire.PortCounters) { c.SymbolErrorCounter, c.LinkDownedCounter = 65535, 255 }))
	for _, code := range []string{"peer-saturated:SymbolErrorCounter", "peer:symbol_error", "peer:link_downed"} {
		specs, err := h.c.Acknowledge("mlx5_0", 1, code, "uid 0")
		if err != nil {
			t.Fatalf("ack %s: %v", code, err)
		}
		apply("ack "+code, specs)
	}
	apply("cleared on the fabric side", h.read(time.Minute, leaf1, nil))
	// A local link down with the switch's LinkDownedCounter +1: the witness.
	apply("local down", h.poll(time.Second, "DOWN"))
	apply("local up", h.poll(time.Second, "ACTIVE"))
	witness := h.read(time.Minute, leaf1, downed(1))
	if len(witness) != 1 || witness[0].Metadata["reason"] != "local-episode" {
		t.Fatalf("no witness: %v", codes(witness))
	}
	apply("witness", witness)
	// Peer churn: three peers in an hour, then acknowledged.
	for i, g := range []string{"0xb83fd20300a01001", "0xb83fd20300a01002"} {
		p := leaf1
		p.NodeGUID, p.Port = g, 20+i
		apply("recabled", h.read(time.Minute, p, nil))
	}
	if v := h.c.View("mlx5_0", 1); !slices.Contains(v.Codes, "peer:unstable") {
		t.Fatalf("no peer:unstable: %v", v.Codes)
	}
	specs, err := h.c.Acknowledge("mlx5_0", 1, "peer:unstable", "uid 0")
	if err != nil {
		t.Fatal(err)
	}
	apply("ack peer:unstable", specs)
	if got := nvs.Messages(event.InfiniBandStateCheck); len(got) != 1 || !strings.Contains(got[0], "ErrorCode:link_downed ") {
		t.Fatalf("NVSentinel's state check condition: %q", got)
	}
	// A restarted check that replays the stream holds what the model holds
	// of the far end: nothing, every condition having been cleared.
	c2 := NewCheck()
	for i := range stream {
		c2.Replay(&stream[i])
	}
	var farModel []string
	for _, c := range model.Conditions() {
		if c.Check == CheckName {
			farModel = append(farModel, c.Entity.String())
		}
	}
	if v := c2.View("mlx5_0", 1); len(v.Codes) != 0 || len(farModel) != 0 {
		t.Fatalf("replayed far end %v, the model's %v", v.Codes, farModel)
	}
}

func e0(stream []event.Event, id string) event.Event {
	for _, e := range stream {
		if e.ID == id {
			return e
		}
	}
	return event.Event{}
}

func nvsEvent(e event.Event) nodecondition.Event {
	out := nodecondition.Event{CheckName: e.CheckName, IsFatal: e.IsFatal, IsHealthy: e.IsHealthy, Message: e.Message,
		RecommendedAction: e.RecommendedAction.String(), ErrorCode: e.ErrorCode, Timestamp: e.GeneratedTimestamp,
		StoreOnly: e.ProcessingStrategy == event.StrategyStoreOnly || e.ProcessingStrategy == event.StrategyStoreAndAnalyse}
	for _, en := range e.EntitiesImpacted {
		out.Entities = append(out.Entities, nodecondition.Entity{Type: en.Type, Value: en.Value})
	}
	return out
}
