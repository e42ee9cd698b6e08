package main

// Black-box tests of issue 32 row 4: the state directory on a filesystem
// whose writes hang (internal/hangfs, a real FUSE mount), as a hung NFS
// server or a wedged disk leaves it.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/hangfs"
	"github.com/nichealth/nichealthd/systemd/notify/notifytest"
)

// onHungFS moves the node's state directory onto fs.
func (n *node) onHungFS(fs *hangfs.FS) {
	n.t.Helper()
	n.state = filepath.Join(fs.Dir, "state", "state.json")
	if err := os.MkdirAll(filepath.Dir(n.state), 0o755); err != nil {
		n.t.Fatal(err)
	}
}

// pollAge is how long ago the daemon's last poll completed, from
// /metrics.
func (n *node) pollAge(url string) (time.Duration, error) {
	m, err := n.scrape(url)
	if err != nil {
		return 0, err
	}
	last, ok := m["nichealth_last_poll_timestamp_seconds"]
	if !ok {
		return 0, fmt.Errorf("no nichealth_last_poll_timestamp_seconds")
	}
	return time.Since(time.Unix(0, int64(last*1e9))), nil
}

// unique fails the test when an event was delivered twice.
func unique(t *testing.T, evs []event.Event) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.ID] {
			t.Fatalf("event %s (%s %s) delivered twice: %s", e.ID, e.Kind, e.Device(), summary(evs))
		}
		seen[e.ID] = true
	}
}

// Issue 32 row 4: with the state directory on a filesystem whose writes
// hang, the poll loop hung in the outbox's append, /metrics waited on the
// outbox's lock and answered 503, and the stall could not be seen. Now,
// while every write hangs: polls go on, /metrics answers and shows the
// faults and the held events, D-Bus answers with the same verdict, and
// the outbox condition says the state directory does not answer (and
// /healthz 503). When the writes resume the condition clears and every
// event reaches the sink once, in order; a restart after that re-sends
// nothing (the state was saved after its events).
func TestBounded_4_HungStateDirectoryKeepsPollsAndViewsMoving(t *testing.T) {
	t.Parallel()
	fs := hangfs.Mount(t)
	b := newBusNode(t, "dgx-h100", integConfig{}, dbustest.Options{})
	n := b.node
	n.withMetrics()
	n.onHungFS(fs)
	n.start()
	b.waitReady()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.waitDrained()
	url := n.metricsURL()
	before := len(n.read())

	fs.Hang(false, true)
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	for fs.Hung() == 0 {
		n.waitPolls(1) // until the append of that DOWN hangs
	}
	n.waitLog("the stall", func(l string) bool { return strings.Contains(l, "a write to the state directory has not returned") })
	n.waitMetric("the fault in the verdict and the held event", "nichealth_outbox_held_events", func(m map[string]float64) bool {
		return m["nichealth_fatal_ports"] == 1 && m["nichealth_outbox_held_events"] >= 1 &&
			m[`nichealth_conditions{check="NICHealthOutbox",severity="degraded"}`] == 1
	})
	if code, body := n.healthz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "has not returned") {
		t.Fatalf("/healthz %d %q while writes to the state directory hang", code, body)
	}
	// A second fault while the first is still held: detected, shown,
	// held behind the first.
	if err := n.h.SetPortState("mlx5_4", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitMetric("both faults in the verdict", "nichealth_fatal_ports", func(m map[string]float64) bool {
		return m["nichealth_fatal_ports"] == 2 && m["nichealth_outbox_held_events"] >= 2
	})
	// Polls keep coming while every write hangs; the poll age is sampled
	// for the record, the poll count is what is asserted.
	var worst time.Duration
	for i := 0; i < 20; i++ {
		n.waitPolls(1)
		age, err := n.pollAge(url)
		if err != nil {
			t.Fatalf("/metrics while writes hang: %v", err)
		}
		worst = max(worst, age)
	}
	t.Logf("poll age while the state directory hangs: at most %v over 20 polls (interval 100ms)", worst)
	m := b.waitManager("D-Bus with both faults and the stall", func(m dbusapi.ManagerView) bool {
		if len(m.FatalPorts) != 2 {
			return false
		}
		for _, c := range m.Conditions {
			if c.Check == "NICHealthOutbox" && strings.Contains(c.Message, "has not returned") {
				return true
			}
		}
		return false
	})
	if m.Healthy {
		t.Fatalf("D-Bus says healthy: %+v", m)
	}
	if c := count(n.read()[before:], func(e event.Event) bool { return e.Kind == event.KindPortFatal }); c != 0 {
		t.Fatal("an event reached the sink before it was durable")
	}

	fs.Release()
	n.waitEventAfter(before, "mlx5_4's DOWN after the writes resume", portEvent("mlx5_4", event.KindPortFatal))
	n.waitMetric("the stall cleared", "nichealth_outbox_held_events", func(m map[string]float64) bool {
		_, cond := m[`nichealth_conditions{check="NICHealthOutbox",severity="degraded"}`]
		return m["nichealth_outbox_held_events"] == 0 && !cond
	})
	if code, body := n.healthz(); code != http.StatusOK {
		t.Fatalf("/healthz %d %q after the writes resumed", code, body)
	}
	n.waitDrained()
	n.stop()
	n.start()
	b.waitReady()
	n.waitPolls(3)
	n.waitDrained()
	n.stop()
	evs := n.read()
	unique(t, evs)
	var order []string
	for _, e := range evs[before:] {
		if e.Kind == event.KindPortFatal {
			order = append(order, e.Device())
		}
	}
	if strings.Join(order, ",") != "mlx5_3,mlx5_4" {
		t.Fatalf("fatal events %v, want mlx5_3,mlx5_4 once each: %s", order, summary(evs[before:]))
	}
}

// Issue 32 row 4: a restart on a state directory whose writes hang never
// finished its first poll (it appended the start-up events), so systemd
// never heard READY=1. Now the first poll completes and READY=1 is sent
// while the append hangs; the state file is left as it was (it is saved
// only after the events it produced are durable). A stop while the write
// still hangs exits without saving it, and the next start, once the
// filesystem answers, detects and delivers the fault exactly once.
func TestBounded_4_StartOnHungStateDirectory(t *testing.T) {
	t.Parallel()
	fs := hangfs.Mount(t)
	n, l := newNotifiedNode(t)
	n.writeIntegConfig(integConfig{})
	n.withMetrics()
	n.onHungFS(fs)
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.waitReadyLog()
	n.waitDrained()
	n.stop()
	// Every message of this first run is consumed: the READY=1 waited
	// for below is the restart's.
	if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool { return m.Has("STOPPING", "1") }); err != nil {
		t.Fatalf("no STOPPING=1: %v", err)
	}
	saved, err := os.ReadFile(filepath.Join(fs.Backing, "state", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	before := len(n.read())

	// Down before the restart: the first poll detects it and appends
	// its event, which hangs.
	if err := n.h.SetPortState("mlx5_2", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	fs.Hang(false, true)
	n.start()
	if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatalf("no READY=1 while the state directory hangs: %v\n%s", err, n.stderr.Tail())
	}
	for fs.Hung() == 0 {
		n.waitPolls(1)
	}
	n.waitMetric("the fault shown and held", "nichealth_fatal_ports", func(m map[string]float64) bool {
		return m["nichealth_fatal_ports"] == 1 && m["nichealth_outbox_held_events"] >= 1
	})
	if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool {
		st, _ := m.Get("STATUS")
		return strings.Contains(st, "outbox")
	}); err != nil {
		t.Fatalf("STATUS= never named the outbox: %v", err)
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	n.waitExit("SIGTERM while the append hangs")
	if !strings.Contains(n.stderr.String(), "the state file was not saved") {
		t.Fatalf("the stop did not say the state was left as it was:\n%s", n.stderr.Tail())
	}
	fs.Release()
	if now, err := os.ReadFile(filepath.Join(fs.Backing, "state", "state.json")); err != nil || string(now) != string(saved) {
		t.Fatalf("the state file changed while its events were not durable (%v)", err)
	}
	n.start()
	n.waitEventAfter(before, "mlx5_2's DOWN", portEvent("mlx5_2", event.KindPortFatal))
	n.waitDrained()
	n.stop()
	evs := n.read()
	unique(t, evs)
	if c := count(evs[before:], portEvent("mlx5_2", event.KindPortFatal)); c != 1 {
		t.Fatalf("mlx5_2's DOWN delivered %d times: %s", c, summary(evs[before:]))
	}
}
