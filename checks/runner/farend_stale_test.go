package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/farend"
)

// TestFarEnd_13_StaleNotVanished (DESIGN.md sections 9 and 13): a far end
// that stops answering keeps, in the snapshot every view reads, its last
// peer and counters with the time of its last good read and the failed
// reads; one found but never read keeps its identity.
func TestFarEnd_13_StaleNotVanished(t *testing.T) {
	m, _ := perfMonitor(t, "dgx-h100", false)
	fe := &fixedFarEnd{}
	fe.rd.Store(&farend.PeerReading{})
	m.UseFarEnd(fe)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), 2)
	ts := *fe.last.Load()
	good := now
	fe.rd.Store(reading(1, ts, 55, good))
	now = now.Add(time.Second)
	m.Cycle(now)

	// The fabric freezes: the reader keeps what the last good read left
	// (Read, ReadAt, Peer, Counters), says Found false, counts the failures.
	stale := reading(2, ts, 55, good)
	stale.At = good.Add(3*time.Minute + 12*time.Second)
	stale.Ports[0].Found, stale.Ports[0].ReadErrors, stale.Ports[0].Seq = false, 5, 1
	stale.Ports[0].Err = "confirm the peer: timeout after 1s"
	// Found once, never read before it went silent.
	stale.Ports[1].Found, stale.Ports[1].Read, stale.Ports[1].ReadAt, stale.Ports[1].ReadErrors = false, false, time.Time{}, 1
	stale.Ports[1].Err = "read the counters of ibsw-leaf1 port 2: timeout after 1s"
	fe.rd.Store(stale)
	now = now.Add(time.Second)
	m.Cycle(now)

	seen := 0
	for _, pi := range m.PortInfos() {
		switch {
		case pi.Device == ts[0].Device && pi.Port == ts[0].Port:
			seen++
			pr := pi.Peer
			if pr == nil || pr.Found || pr.GUID != "0xb83fd20300a00000" || pr.Port != 1 || pr.Name != "ibsw-leaf0" {
				t.Fatalf("a silent far end's view lost its peer: %+v", pr)
			}
			if !pr.ReadAt.Equal(good) || pr.ReadErrors != 5 || !strings.HasPrefix(pr.Err, "confirm the peer") {
				t.Fatalf("a silent far end's age: read at %v (want %v), %d errors, %q", pr.ReadAt, good, pr.ReadErrors, pr.Err)
			}
			if len(pr.Counters) == 0 || pr.Counters[0].Field != "SymbolErrorCounter" || pr.Counters[0].Value != 55 {
				t.Fatalf("a silent far end's last counters: %+v", pr.Counters)
			}
		case pi.Device == ts[1].Device && pi.Port == ts[1].Port:
			seen++
			pr := pi.Peer
			if pr == nil || pr.GUID != "0xb83fd20300a00001" || pr.Name != "ibsw-leaf1" || !pr.ReadAt.IsZero() || pr.ReadErrors != 1 || len(pr.Counters) != 0 {
				t.Fatalf("a far end found but never read: %+v", pr)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("saw %d of the 2 silent ports", seen)
	}
}
