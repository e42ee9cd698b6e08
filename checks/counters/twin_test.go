package counters

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
)

// Seed 10.4 step 6 latches a fatal delta breach; on a RoCE port one link
// down moves both link_downed and link_down_events_phy. Both stay
// witnesses (their snapshots follow every reading, either alone still
// raises), but one link down raises one latched condition, so the
// operator acknowledges one: whichever counter is read first that tick
// latches, the other is absorbed, in either order and on the next tick.
func TestCounters_10_4_RoCELinkDownIsOneCondition(t *testing.T) {
	pma, phy := def("link_downed"), phyDef("link_down_events_phy")
	for _, order := range [][2]*countertable.Definition{{pma, phy}, {phy, pma}} {
		r := phyRig(t, 200)
		r.ev.Reconcile(r.st, countertable.TableDefaults())
		r.none(order[0], 3)
		r.none(order[1], 3)
		sp := r.at(time.Second).one(order[0], 4)
		if !sp.IsFatal || sp.Metadata["witness"] != order[1].Name || !strings.Contains(sp.Message, order[1].Name+" counts the same link down") {
			t.Fatalf("%s breach %+v", order[0].Name, sp)
		}
		r.at(time.Second).none(order[1], 4) // same tick
		r.at(2*time.Second).none(order[1], 5)
		if r.breached(order[1]) || r.st.CounterSnapshots[r.key(order[1])].Value != 5 {
			t.Fatalf("%s latched or its snapshot held: %+v", order[1].Name, r.st)
		}
		// Acknowledging either ends the one condition.
		specs, err := r.ev.Acknowledge(r.st, r.dev, r.port, order[1].Name, r.now, "uid 0")
		if err != nil || len(specs) != 1 || specs[0].Kind != event.KindCounterRecovered || specs[0].ErrorCode[0] != order[0].Name {
			t.Fatalf("ack through the twin: %+v %v", specs, err)
		}
		if _, err := r.ev.Acknowledge(r.st, r.dev, r.port, order[0].Name, r.now, "uid 0"); !errors.Is(err, ErrNotLatched) {
			t.Fatalf("second ack: %v", err)
		}
		// The next link down is one condition again.
		r.at(3*time.Second).one(order[0], 5)
		r.at(3*time.Second).none(order[1], 6)
	}
	// link_downed saturated at 255 does not move: the PHY twin alone
	// still raises.
	r := phyRig(t, 200)
	r.one(pma, 255) // saturated, said once
	r.none(phy, 300)
	r.at(time.Second).none(pma, 255)
	if sp := r.at(time.Second).one(phy, 301); !sp.IsFatal {
		t.Fatalf("%+v", sp)
	}
	// An InfiniBand port has no twin: its link_downed message says so.
	ib := newRig(t)
	ib.ev.Reconcile(ib.st, countertable.TableDefaults())
	ib.none(pma, 0)
	if sp := ib.at(time.Second).one(pma, 1); sp.Metadata["witness"] != "" || strings.Contains(sp.Message, "same link down") {
		t.Fatalf("IB link_downed %+v", sp)
	}
}
