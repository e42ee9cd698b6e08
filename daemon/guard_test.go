package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// recordSink keeps every event delivered to it; with panics set, its
// next Send panics that many times (a sink's encoding bug).
type recordSink struct {
	name   string
	panics atomic.Int32
	mu     sync.Mutex
	evs    []event.Event
}

func (s *recordSink) Name() string { return s.name }
func (s *recordSink) Close() error { return nil }

func (s *recordSink) Send(_ context.Context, evs []event.Event) error {
	if s.panics.Add(-1) >= 0 {
		var enc map[string]int
		enc["encoding bug"]++ // nil map write
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, evs...)
	return nil
}

func (s *recordSink) events() []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.evs)
}

// guardedNode is a daemon on a simulated dgx-h100 host whose Seams.Step
// panics while armed for one (check, step), with /metrics on and every
// event recorded.
type guardedNode struct {
	t      *testing.T
	h      *sim.Host
	dir    string
	cfg    string
	addr   string
	rec    *recordSink
	logs   *logBuf
	armed  atomic.Bool
	target [2]string
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
}

func newGuardedNode(t *testing.T, check, step string) *guardedNode {
	t.Helper()
	n := &guardedNode{t: t, h: simtest.Build(t, "dgx-h100"), dir: t.TempDir(), rec: &recordSink{name: "record"},
		logs: &logBuf{}, target: [2]string{check, step}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = ln.Addr().String()
	ln.Close()
	n.cfg = writeConfig(t, n.h, n.dir, fmt.Sprintf("metricsAddress = %q\n[dbus]\nenabled = false\n", n.addr))
	n.armed.Store(true)
	return n
}

// hook panics in the armed target's step: a check's step when check is
// set, a step not narrowed to one check otherwise.
func (n *guardedNode) hook(check, step string) {
	if n.armed.Load() && check == n.target[0] && step == n.target[1] {
		panic(fmt.Sprintf("injected into %s/%s", check, step))
	}
}

func (n *guardedNode) start() {
	n.t.Helper()
	d, err := New(Options{ConfigPath: n.cfg, StateFile: filepath.Join(n.dir, "state.json"),
		Log: slog.New(slog.NewTextHandler(n.logs, nil)), ExtraSinks: []sink.Sink{n.rec}, Seams: Seams{Step: n.hook}})
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.d, n.cancel, n.done = d, cancel, make(chan error, 1)
	go func() { n.done <- d.Run(ctx) }()
	n.t.Cleanup(n.stop)
	waitFor(n.t, "first poll", func() bool { return !d.LastPoll().IsZero() })
}

func (n *guardedNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if err := <-n.done; err != nil {
		n.t.Errorf("Run: %v", err)
	}
	n.cancel = nil
}

func (n *guardedNode) waitEvent(what string, f func(e event.Event) bool) event.Event {
	n.t.Helper()
	var got event.Event
	waitFor(n.t, what, func() bool {
		for _, e := range n.rec.events() {
			if f(e) {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

func (n *guardedNode) count(f func(e event.Event) bool) int {
	c := 0
	for _, e := range n.rec.events() {
		if f(e) {
			c++
		}
	}
	return c
}

func (n *guardedNode) healthz() (int, string) {
	resp, err := http.Get("http://" + n.addr + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitPolls waits until the daemon has completed k more polls.
func (n *guardedNode) waitPolls(k int) {
	n.t.Helper()
	for i := 0; i < k; i++ {
		last := n.d.LastPoll()
		waitFor(n.t, "a poll", func() bool { return n.d.LastPoll().After(last) })
	}
}

func checkEvent(kind event.Kind, check string) func(e event.Event) bool {
	return func(e event.Event) bool { return e.Kind == kind && e.Metadata["check"] == check }
}

// witness is a fault a check that was not disabled must still report.
type witness struct {
	what  string
	apply func(h *sim.Host) error
	seen  func(e event.Event) bool
}

var (
	portDownWitness = witness{"mlx5_0 port 1 DOWN (InfiniBandStateCheck)",
		func(h *sim.Host) error { return h.SetPortState("mlx5_0", 1, "DOWN", "Disabled") },
		func(e event.Event) bool { return e.Kind == event.KindPortFatal && e.Device() == "mlx5_0" }}
	linkDownedWitness = witness{"mlx5_0 link_downed +1 (the counter check, reported under InfiniBandStateCheck)",
		func(h *sim.Host) error { return h.AddCounter("mlx5_0", 1, "counters/link_downed", 1) },
		func(e event.Event) bool {
			return e.Kind == event.KindCounterBreach && e.Device() == "mlx5_0" && e.Metadata["counter"] == "link_downed"
		}}
)

// An injected panic in each check's step disables that check alone: one
// check-failed condition names it (non-fatal, no remediation: the bug is
// the daemon's), the node is not healthy and /healthz says which check,
// the panic's frames are logged once, every other check keeps polling and
// still reports a fault, and a reload runs the check again and clears it.
func TestGuard_InjectedPanicInEachCheckStep(t *testing.T) {
	ib, eth := event.InfiniBandStateCheck, event.EthernetStateCheck
	ibDeg, ethDeg := event.InfiniBandDegradationCheck, event.EthernetDegradationCheck
	for _, tc := range []struct {
		check, step string
		blamed      []string
		w           witness
	}{
		{ib, "observe", []string{ib}, linkDownedWitness},
		{eth, "judge", []string{eth}, portDownWitness},
		{"", "presence", []string{ib, eth}, linkDownedWitness},
		{"", "cards", []string{ib, eth}, linkDownedWitness},
		{ibDeg, "plan", []string{ibDeg}, portDownWitness},
		{ibDeg, "counters", []string{ibDeg}, portDownWitness},
		{ethDeg, "counters", []string{ethDeg}, linkDownedWitness},
		{aerCheck, "plan", []string{aerCheck}, portDownWitness},
		{aerCheck, "pcie-aer", []string{aerCheck}, linkDownedWitness},
		{sanityCheck, "link-sanity", []string{sanityCheck}, linkDownedWitness},
		{"", "rules", ruleChecks, portDownWitness},
		// Taking the configuration at start: not narrowed to a link
		// layer, so both checks the counter check serves are blamed.
		{ibDeg, "configure", []string{ibDeg, ethDeg}, portDownWitness},
		{ruleChecks[0], "configure", ruleChecks, portDownWitness},
	} {
		t.Run(tc.check+"/"+tc.step, func(t *testing.T) {
			n := newGuardedNode(t, tc.check, tc.step)
			n.start()
			for _, c := range tc.blamed {
				e := n.waitEvent("check-failed "+c, checkEvent(event.KindCheckFailed, c))
				if e.IsFatal || e.IsHealthy || e.CheckName != c || e.RecommendedAction != event.ActionNone ||
					!strings.Contains(e.Message, tc.step) || !strings.Contains(e.Message, "injected") ||
					!slices.Contains(e.EntitiesImpacted, event.Entity{Type: event.EntityCheck, Value: c}) {
					t.Fatalf("check-failed event %+v", e)
				}
			}
			// The verdict is published at the end of the poll whose
			// events the sink may already have.
			waitFor(t, "the verdict shows the failed check", func() bool {
				snap := n.d.Snapshot()
				return !snap.Healthy() && len(snap.FailedChecks()) == len(tc.blamed)
			})
			code, body := n.healthz()
			if code != http.StatusServiceUnavailable || !strings.Contains(body, tc.blamed[0]) {
				t.Fatalf("/healthz %d %q", code, body)
			}
			if err := tc.w.apply(n.h); err != nil {
				t.Fatal(err)
			}
			n.waitEvent(tc.w.what, tc.w.seen)
			n.waitPolls(3)
			for _, c := range tc.blamed {
				if k := n.count(checkEvent(event.KindCheckFailed, c)); k != 1 {
					t.Errorf("%d check-failed events for %s, want 1", k, c)
				}
			}
			logs := n.logs.String()
			if k := strings.Count(logs, "check failed: a panic"); k != len(tc.blamed) {
				t.Errorf("%d panic log lines, want %d:\n%s", k, len(tc.blamed), logs)
			}
			if !strings.Contains(logs, "guard_test.go") || !strings.Contains(logs, "injected into") {
				t.Errorf("the log lacks the panic's frames:\n%s", logs)
			}

			n.armed.Store(false)
			if err := n.d.RequestReload(); err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.blamed {
				r := n.waitEvent("check-resumed "+c, checkEvent(event.KindCheckResumed, c))
				if !r.IsHealthy || r.CheckName != c || !slices.Equal(r.ErrorCode, []string{"check-failed"}) {
					t.Fatalf("check-resumed event %+v", r)
				}
			}
			waitFor(t, "/healthz ok", func() bool { code, _ := n.healthz(); return code == http.StatusOK })
			if fc := n.d.Snapshot().FailedChecks(); len(fc) != 0 {
				t.Fatalf("failed checks after the reload: %+v", fc)
			}
		})
	}
}

// A panic while a check takes a reloaded configuration disables that
// check alone instead of ending the daemon; the next reload runs it again.
func TestGuard_PanicTakingAReloadDisablesOnlyThatCheck(t *testing.T) {
	ibDeg, ethDeg := event.InfiniBandDegradationCheck, event.EthernetDegradationCheck
	n := newGuardedNode(t, ibDeg, "configure")
	n.armed.Store(false)
	n.start()
	n.waitPolls(2)
	n.armed.Store(true)
	if err := n.d.RequestReload(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{ibDeg, ethDeg} {
		e := n.waitEvent("check-failed "+c, checkEvent(event.KindCheckFailed, c))
		if !strings.Contains(e.Message, "configure") || !strings.Contains(e.Message, "injected") {
			t.Fatalf("check-failed event %+v", e)
		}
	}
	if err := portDownWitness.apply(n.h); err != nil {
		t.Fatal(err)
	}
	n.waitEvent(portDownWitness.what, portDownWitness.seen)
	n.armed.Store(false)
	if err := n.d.RequestReload(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{ibDeg, ethDeg} {
		n.waitEvent("check-resumed "+c, checkEvent(event.KindCheckResumed, c))
	}
	waitFor(t, "no failed check", func() bool { return len(n.d.Snapshot().FailedChecks()) == 0 })
}

// A check-failed condition is kept in the state file: after a restart the
// node is still not healthy until the check has run again, then it clears.
func TestGuard_FailedCheckClearsWhenItRunsAfterRestart(t *testing.T) {
	n := newGuardedNode(t, aerCheck, "pcie-aer")
	n.start()
	n.waitEvent("check-failed", checkEvent(event.KindCheckFailed, aerCheck))
	n.waitPolls(2)
	n.stop()
	n.armed.Store(false)
	n.start()
	r := n.waitEvent("check-resumed after restart", checkEvent(event.KindCheckResumed, aerCheck))
	if !strings.Contains(r.Message, "runs again") {
		t.Fatalf("resumed %+v", r)
	}
	waitFor(t, "no failed check", func() bool { return len(n.d.Snapshot().FailedChecks()) == 0 })
}

// A sink whose Send panics is stopped alone: check-failed names it, the
// other sinks and every check keep going, its events wait in the outbox,
// and a reload restarts it, clears the condition and delivers them.
func TestGuard_SinkPanicStopsOnlyThatSink(t *testing.T) {
	n := newGuardedNode(t, "", "")
	broken := &recordSink{name: "broken"}
	broken.panics.Store(1)
	d, err := New(Options{ConfigPath: n.cfg, StateFile: filepath.Join(n.dir, "state.json"),
		Log: slog.New(slog.NewTextHandler(n.logs, nil)), ExtraSinks: []sink.Sink{n.rec, broken}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.d, n.cancel, n.done = d, cancel, make(chan error, 1)
	go func() { n.done <- d.Run(ctx) }()
	t.Cleanup(n.stop)
	e := n.waitEvent("check-failed sink:broken", checkEvent(event.KindCheckFailed, "sink:broken"))
	if !strings.Contains(e.Message, "encoding bug") && !strings.Contains(e.Message, "nil map") {
		t.Fatalf("sink failure %+v", e)
	}
	if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("port fatal delivered to the other sink", portDownWitness.seen)
	if len(broken.events()) != 0 {
		t.Fatal("the stopped sink received events")
	}
	if err := n.d.RequestReload(); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("check-resumed sink:broken", checkEvent(event.KindCheckResumed, "sink:broken"))
	waitFor(t, "the restarted sink catches up from the outbox", func() bool {
		for _, e := range broken.events() {
			if portDownWitness.seen(e) {
				return true
			}
		}
		return false
	})
}
