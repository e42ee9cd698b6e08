package daemon

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// keptServer stands for a new D-Bus server: it records what reaches
// ListEvents's history, remembered or posted. before runs once, inside
// the first Remember, which is where a commit in flight can land while
// the daemon backfills.
type keptServer struct {
	mu     sync.Mutex
	seqs   map[uint64]bool
	before func()
}

func (k *keptServer) Remember(_ event.Event, seq uint64) {
	if f := k.before; f != nil {
		k.before = nil
		f()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seqs[seq] = true
}

func (k *keptServer) Post(ev event.Event, seq uint64) { k.Remember(ev, seq) }
func (k *keptServer) RefreshLater()                   {}
func (k *keptServer) Close() error                    { return nil }

// dbusapi/API.md: ListEvents(0) returns every kept event. A commit runs
// without the daemon's lock, so its events can reach the outbox after a
// new server was backfilled and be announced before the daemon switched
// to it; such events were on no bus and missing from ListEvents (seen as
// TestIntegration_DBus_ListEventsKeepsStartupEvents failing on a busy
// machine). Here the commit lands exactly there, every time.
func TestDBus_AttachKeepsEventsCommittedWhileBackfilling(t *testing.T) {
	d, _ := newCommitDaemon(t)
	now := time.Now()
	pollSettled(d, now) // start-up events: something to backfill
	if d.ob.Stats().LastSeq == 0 {
		t.Fatal("the first poll committed no event; nothing to backfill")
	}
	var specs []event.Spec
	for i := 0; i < 3; i++ {
		specs = append(specs, event.Spec{Kind: event.KindPortNonFatal, CheckName: event.InfiniBandStateCheck,
			Device: "mlx5_0", Port: 1, Message: fmt.Sprintf("Port mlx5_0 port 1: step %d", i)})
	}
	d.mu.Lock()
	d.holdLocked(specs, now.Add(time.Second))
	evs := d.held.evs
	d.held.evs = nil
	d.mu.Unlock()

	k := &keptServer{seqs: map[uint64]bool{}}
	k.before = func() {
		// The job in flight: append and announce, with no bus yet.
		d.runCommit(&commitJob{evs: evs, start: now, done: make(chan struct{})})
	}
	d.attachBus(k)

	recs, err := d.ob.ReadAfter(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, r := range recs {
		if !k.seqs[r.Seq] {
			missing = append(missing, fmt.Sprintf("seq %d %q", r.Seq, r.Event.Message))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d outbox events are missing from the new server's history: %v", len(missing), len(recs), missing)
	}
	if got := d.currentBus(); got != k {
		t.Fatalf("the daemon posts to %v, not the attached server", got)
	}
}
