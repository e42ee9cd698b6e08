package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
)

// DESIGN.md difference 18, time not polls, on the built daemon at a
// 250 ms and a 1 s poll, with nichealth-sim detach/restore as the driver
// reload: a function that loses its RDMA device for several enumerations
// (more than the 3 a poll count would need) and comes back within the
// hold raises nothing at all; one that stays away is one fatal condition,
// raised no sooner than the hold after the detach. The hold here is 12 s
// (inventory.lostFunctionHold), so that the 1 s poll's reload (one
// enumeration to see it MISSING, four more, the restore) stays inside it
// on a loaded machine.
func TestDesign_18_BlackBox_LossIsHeldInTimeAtAnyPollInterval(t *testing.T) {
	t.Parallel()
	const hold = 12 * time.Second
	for _, poll := range []time.Duration{250 * time.Millisecond, time.Second} {
		t.Run(poll.String(), func(t *testing.T) {
			t.Parallel()
			v := newShapeViewNode(t, "dgx-h100", "[inventory]\nlostFunctionHold = \"12s\"\n")
			v.start("--state-polling-interval", poll.String())
			v.waitReady()

			skip := v.mark()
			detached := time.Now()
			v.sim("detach", "mlx5_0", "no-rdma")
			v.waitPort("mlx5_0", 1, "MISSING", func(p dbusapi.PortView) bool { return p.State == "MISSING" })
			// Four more polls without it: three complete enumerations
			// alone would have made it a loss.
			v.waitPolledFor(4 * poll)
			v.sim("restore", "mlx5_0")
			v.waitPort("mlx5_0", 1, "back", func(p dbusapi.PortView) bool { return p.State == "ACTIVE" })
			if gone := time.Since(detached); gone >= hold {
				t.Skipf("the machine was too slow: the reload lasted %v, longer than the %v hold", gone, hold)
			}
			v.waitPolledFor(3 * poll) // nothing comes late
			if n := count(v.read()[skip:], func(event.Event) bool { return true }); n != 0 {
				t.Fatalf("a driver reload at a %v poll raised %d events: %s", poll, n, summary(v.read()[skip:]))
			}
			v.agree(verdictWant{"mlx5_0", 1, "healthy"})

			d := simDevice(t, v.h, "mlx5_5")
			skip = len(v.read())
			detached = time.Now()
			v.sim("detach", "mlx5_5", "no-rdma")
			e := v.waitEventAfter(skip, "mlx5_5's loss", functionEvent(d.PCIAddress, event.KindFunctionFailed))
			if after := e.GeneratedTimestamp.Sub(detached); after < hold {
				t.Fatalf("the loss was raised %v after the detach, before the %v hold", after, hold)
			}
			if !e.IsFatal || e.RecommendedAction != event.ActionReplaceVM || !strings.Contains(e.Message, "one condition") {
				t.Fatalf("event %+v", e)
			}
			if fatal := count(v.read()[skip:], func(e event.Event) bool { return e.IsFatal }); fatal != 1 {
				t.Fatalf("one loss, %d fatal events: %s", fatal, summary(v.read()[skip:]))
			}
			v.stop()
		})
	}
}
