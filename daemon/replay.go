package daemon

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/persist/outbox"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// replayOutbox applies to st every outbox event newer than st.OutboxSeq.
// The daemon commits an event to the outbox before the state that produced
// it; a crash in between leaves consumers told something the state does not
// remember. Replaying makes the state agree with what was said, so the
// first poll corrects it if the hardware has moved on since (the fatal that
// was sent gets its recovery, the recovery that was sent gets its fatal).
func replayOutbox(st *persist.State, model *health.Model, ob *outbox.Outbox, defs []counters.Definition) (int, error) {
	n := 0
	for {
		recs, err := ob.ReadAfter(st.OutboxSeq, 512)
		if err != nil {
			return n, fmt.Errorf("replay the outbox onto the state: %w", err)
		}
		if len(recs) == 0 {
			return n, nil
		}
		for i := range recs {
			applyEvent(st, &recs[i].Event, defs)
			model.Apply(&recs[i].Event)
			st.OutboxSeq = recs[i].Seq
			n++
		}
	}
}

func applyEvent(st *persist.State, e *event.Event, defs []counters.Definition) {
	dev := e.Device()
	port, _ := strconv.Atoi(e.Port())
	switch e.Kind {
	case event.KindPortFatal, event.KindPortNonFatal, event.KindPortRecovered, event.KindPortBaseline:
		s, err1 := sysfs.ParseState([]byte(e.Metadata["state"]))
		p, err2 := sysfs.ParsePhysState([]byte(e.Metadata["physState"]))
		if err1 != nil || err2 != nil || dev == "" || port <= 0 {
			return
		}
		st.PortStates[checks.PortKey(dev, port)] = persist.PortState{
			State: fmt.Sprintf("%d: %s", s.ID, s.Name), PhysicalState: fmt.Sprintf("%d: %s", p.ID, p.Name),
			Device: dev, Port: port, LinkLayer: e.Metadata["linkLayer"], Operstate: e.Metadata["operstate"],
		}
	case event.KindCounterBreach:
		name := counterName(e)
		if name == "" {
			return
		}
		fp := ""
		for i := range defs {
			if defs[i].Name == name {
				fp = defs[i].Fingerprint()
			}
		}
		st.BreachFlags[counters.Key(dev, port, name)] = persist.BreachFlag{
			Breached: true, CheckName: e.CheckName, IsFatal: e.IsFatal, Since: e.GeneratedTimestamp, Definition: fp,
		}
	case event.KindCounterRecovered:
		// Reset, acknowledgement or removal: the latch is gone, and the
		// snapshot is dropped so the counter re-baselines at its current
		// value instead of re-breaching against the old one.
		key := counters.Key(dev, port, counterName(e))
		delete(st.BreachFlags, key)
		delete(st.CounterSnapshots, key)
	case event.KindCounterSaturated:
		if name := counterName(e); name != "" {
			st.Saturated[counters.Key(dev, port, name)] = e.GeneratedTimestamp
		}
	case event.KindCardAnomaly, event.KindCardRecovered:
		card := e.Metadata["card"]
		for _, en := range e.EntitiesImpacted {
			if en.Type == event.EntityCard {
				card = en.Value // written before card events named their ports
			}
		}
		if card == "" {
			return
		}
		if e.Kind == event.KindCardRecovered {
			delete(st.CardAnomalies, card)
			return
		}
		active, _ := strconv.Atoi(e.Metadata["active"])
		expected, _ := strconv.Atoi(e.Metadata["expected"])
		st.CardAnomalies[card] = persist.CardAnomaly{Role: e.Metadata["role"], Active: active, Expected: expected, Since: e.GeneratedTimestamp}
	case event.KindDeviceDisappeared:
		if dev != "" && !slices.Contains(st.Disappeared, dev) {
			st.Disappeared = append(st.Disappeared, dev)
		}
		if dev != "" && !slices.Contains(st.KnownDevices, dev) {
			st.KnownDevices = append(st.KnownDevices, dev)
		}
	case event.KindDeviceReappeared:
		st.Disappeared = slices.DeleteFunc(st.Disappeared, func(s string) bool { return s == dev })
	}
}

func counterName(e *event.Event) string {
	if n := e.Metadata["counter"]; n != "" {
		return n
	}
	if len(e.ErrorCode) == 1 {
		return e.ErrorCode[0]
	}
	return ""
}
