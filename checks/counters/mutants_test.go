package counters

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// TestCounters_6_3_ResetRecoveryReportsLastValueRead: while a breach is
// latched the snapshot stays at the breach; the recovery on a reset says
// what the counter last read before the reset (seed 6.3 lastPollValue),
// not the older snapshot.
func TestCounters_6_3_ResetRecoveryReportsLastValueRead(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.none(ld, 3)
	r.at(time.Second).one(ld, 4) // breach, latched; snapshot 4
	r.at(2*time.Second).none(ld, 6)
	r.at(3*time.Second).none(ld, 9) // last value read: 9
	sp := r.at(4*time.Second).one(ld, 0)
	if sp.Kind != event.KindCounterRecovered || sp.Metadata["previousValue"] != "9" ||
		!strings.Contains(sp.Message, "counter reset from 9 to 0") {
		t.Fatalf("recovery = %+v", sp)
	}
}

// TestCounters_DESIGN2_RecoveryOfAFlagWithoutCheckName: a breach flag
// persisted without its check name (an older state file) is recovered
// where this build reports the breach (seed 11.1: a fatal one under the
// state check, a non-fatal one under the degradation check of the port's
// link layer), never under "".
func TestCounters_DESIGN2_RecoveryOfAFlagWithoutCheckName(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.st.CounterSnapshots[r.key(ld)] = CounterSnapshot{Value: 5, Timestamp: t0}
	r.st.BreachFlags[r.key(ld)] = BreachFlag{Breached: true, IsFatal: true, Since: t0}
	sp := r.at(time.Second).one(ld, 0)
	if sp.Kind != event.KindCounterRecovered || sp.CheckName != "InfiniBandStateCheck" {
		t.Fatalf("recovery = %+v", sp)
	}
	se := def("symbol_error")
	r.st.CounterSnapshots[r.key(se)] = CounterSnapshot{Value: 5, Timestamp: t0}
	r.st.BreachFlags[r.key(se)] = BreachFlag{Breached: true, Since: t0}
	if sp := r.at(2*time.Second).one(se, 0); sp.Kind != event.KindCounterRecovered || sp.CheckName != "InfiniBandDegradationCheck" {
		t.Fatalf("non-fatal recovery = %+v", sp)
	}
	// A flag that has its check name keeps it.
	r2 := newRig(t)
	r2.st.CounterSnapshots[r2.key(ld)] = CounterSnapshot{Value: 5, Timestamp: t0}
	r2.st.BreachFlags[r2.key(ld)] = BreachFlag{Breached: true, CheckName: "OtherCheck", Since: t0}
	if sp := r2.at(time.Second).one(ld, 0); sp.CheckName != "OtherCheck" {
		t.Fatalf("recovery check = %q, want the flag's", sp.CheckName)
	}
}
