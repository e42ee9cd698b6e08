package daemon

import (
	"fmt"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// replayOutbox applies every outbox event newer than *seq to the checks'
// memory and the health model, through each check's own Replay. The daemon
// commits an event to the outbox before the state that produced it; a
// crash in between leaves consumers told something the state does not
// remember. Replaying makes the state agree with what was said, so the
// first poll corrects it if the hardware has moved on since (the fatal that
// was sent gets its recovery, the recovery that was sent gets its fatal).
func replayOutbox(seq *uint64, mem *Memory, model *health.Model, ob *outbox.Outbox, defs []counters.Definition) (int, error) {
	n := 0
	for {
		recs, err := ob.ReadAfter(*seq, 512)
		if err != nil {
			return n, fmt.Errorf("replay the outbox onto the state: %w", err)
		}
		if len(recs) == 0 {
			return n, nil
		}
		for i := range recs {
			mem.replay(&recs[i].Event, defs)
			model.Apply(&recs[i].Event)
			*seq = recs[i].Seq
			n++
		}
	}
}

// replay hands an event to the check that emitted it.
func (m *Memory) replay(e *event.Event, defs []counters.Definition) {
	switch e.Kind {
	case event.KindPortFatal, event.KindPortNonFatal, event.KindPortRecovered, event.KindPortBaseline,
		event.KindDeviceDisappeared, event.KindDeviceReappeared:
		m.Ports.Replay(e)
	case event.KindCounterBreach, event.KindCounterRecovered, event.KindCounterSaturated, event.KindCounterUnsaturated,
		event.KindCongestion, event.KindCongestionCleared:
		m.Counters.Replay(e, defs)
	case event.KindCardAnomaly, event.KindCardRecovered, event.KindNoSubnetManager, event.KindSubnetManagerFound:
		m.Cards.Replay(e)
	case event.KindPCIeAER, event.KindPCIeAERRecovered:
		m.AER.Replay(e)
	case event.KindFunctionFailed, event.KindFunctionAbsent, event.KindFunctionOK, event.KindDrift, event.KindDriftOK,
		event.KindPortsShort, event.KindPortsOK:
		m.Inventory.Replay(e)
	case event.KindKernelLog, event.KindKernelLogCleared:
		m.KernelLog.Replay(e)
	}
}
