package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/persist/outbox"
	"github.com/nichealth/nichealthd/systemd/notify"
	"github.com/nichealth/nichealthd/topology/sim"
)

// newCommitDaemon is a daemon on a minimal simulated host, not running:
// the test drives its polls and commits.
func newCommitDaemon(t *testing.T) (*Daemon, *sim.Host) {
	t.Helper()
	h, err := sim.Build(t.TempDir(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := New(Options{ConfigPath: writeConfig(t, h, dir, ""), StateFile: filepath.Join(dir, "state", "state.json"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		settle(d)
		d.run.Close()
		d.ob.Close()
	})
	d.nt = notify.New(log)
	d.wd = notify.NewProgressWatchdog(d.nt, notify.WatchdogOptions{StallAfter: time.Hour, Logger: log})
	return d, h
}

// settle waits for the write in flight, if any, and takes it in: a test
// then sees what a poll on a disk that answers in time sees.
func settle(d *Daemon) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if j := d.held.job; j != nil {
		<-j.done
		d.finishLocked(j)
	}
}

// pollSettled runs one poll and waits for its write.
func pollSettled(d *Daemon, now time.Time) {
	d.poll(now)
	settle(d)
}

// NVSentinel's platform connector sorts a batch by generatedTimestamp
// with a sort that need not keep the order of equal stamps (DESIGN.md
// difference 11): events built in one commit, and in later commits while
// the clock stands still or steps back, are stamped strictly after one
// another, in the order they were detected, and reach the outbox so.
func TestDurability_StampsStrictlyIncreaseWithinACommit(t *testing.T) {
	d, _ := newCommitDaemon(t)
	now := time.Now()
	spec := func(dev string, i int) event.Spec {
		return event.Spec{Kind: event.KindPortNonFatal, CheckName: event.InfiniBandStateCheck, Device: dev, Port: 1,
			Message: fmt.Sprintf("Port %s port 1: step %d", dev, i)}
	}
	d.mu.Lock()
	last := d.ob.Stats().LastSeq
	var specs []event.Spec
	for i := 0; i < 5; i++ {
		specs = append(specs, spec("mlx5_0", i), spec("mlx5_1", i))
	}
	d.holdLocked(specs, now)
	// The clock stands still, then steps back a second.
	d.holdLocked([]event.Spec{spec("mlx5_0", 5)}, now)
	d.holdLocked([]event.Spec{spec("mlx5_1", 5), spec("mlx5_0", 6)}, now.Add(-time.Second))
	d.commitWithin(true, time.Minute)
	d.mu.Unlock()
	settle(d)
	recs, err := d.ob.ReadAfter(last, 0)
	if err != nil || len(recs) != 13 {
		t.Fatalf("%d records in the outbox (%v), want 13", len(recs), err)
	}
	for i := 1; i < len(recs); i++ {
		a, b := recs[i-1].Event.GeneratedTimestamp, recs[i].Event.GeneratedTimestamp
		if !b.After(a) {
			t.Fatalf("event %d (%s) stamped %s, not after event %d's %s", i, recs[i].Event.Message, b.Format(time.RFC3339Nano), i-1, a.Format(time.RFC3339Nano))
		}
	}
	if first := recs[0].Event.GeneratedTimestamp; !first.Equal(now) {
		t.Fatalf("the first event stamped %s, want the time it was detected, %s", first, now)
	}
}

// DESIGN.md section 3: the state is committed only after the events it
// produced are durable. While the outbox refuses appends, no poll (quiet
// ones included, which have no event of their own), no acknowledgement
// or reload path (a forced commit) and no backoff's end saves the state
// file: after a crash it would remember a DOWN no consumer was told of.
// Once the outbox takes the events, the state is saved, and it names the
// last of them as included. (Broken, this was caught only by a
// black-box test minutes in.)
func TestDurability_NoStateSaveWhileTheOutboxRefuses(t *testing.T) {
	d, h := newCommitDaemon(t)
	now := time.Now()
	for i := 0; i < 3; i++ {
		pollSettled(d, now)
		now = now.Add(time.Second)
	}
	saved, err := os.ReadFile(d.opts.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := d.ob.Dir()
	d.ob.Close() // every append now fails (ErrClosed), as on a failing disk
	if err := h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		pollSettled(d, now)
		if i%3 == 2 {
			// A reload or an acknowledgement commits with changed set,
			// and a backoff that has run out retries at once.
			d.mu.Lock()
			d.held.next = time.Time{}
			d.commitWithin(true, time.Minute)
			d.mu.Unlock()
			settle(d)
		}
		now = now.Add(time.Second)
		if b, err := os.ReadFile(d.opts.StateFile); err != nil || !bytes.Equal(b, saved) {
			t.Fatalf("poll %d: the state file was saved while the outbox refused the events it produced (%v)", i, err)
		}
	}
	d.mu.Lock()
	held := len(d.held.evs)
	d.mu.Unlock()
	if held == 0 {
		t.Fatal("no event held: the fault was not detected")
	}
	if c := undeliverable(d.Snapshot()); !strings.Contains(c, "cannot be written to the outbox") {
		t.Fatalf("outbox condition %q", c)
	}

	ob, err := outbox.Open(dir, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.ob = ob
	d.mu.Lock()
	d.held.next = time.Time{}
	d.mu.Unlock()
	pollSettled(d, now)
	b, err := os.ReadFile(d.opts.StateFile)
	if err != nil || bytes.Equal(b, saved) {
		t.Fatalf("the state was not saved once the outbox took the events (%v)", err)
	}
	var st persist.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if last := ob.Stats().LastSeq; st.OutboxSeq != last {
		t.Fatalf("saved state includes outbox seq %d, the outbox's last is %d", st.OutboxSeq, last)
	}
	recs, err := ob.ReadAfter(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	downs := 0
	for _, r := range recs {
		if r.Event.Kind == event.KindPortFatal && r.Event.Device() == "mlx5_0" {
			downs++
		}
	}
	if downs != 1 {
		t.Fatalf("%d DOWN events of mlx5_0 in the outbox, want 1", downs)
	}
}
