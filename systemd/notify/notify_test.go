package notify

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/syncbuf"
	"github.com/nichealth/nichealthd/systemd/notify/notifytest"
)

// wait is generous: it bounds a hang, it is not a speed assertion.
const wait = 10 * time.Second

func testLogger() (*slog.Logger, *syncbuf.Buffer) {
	buf := &syncbuf.Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func listen(t *testing.T) *notifytest.Listener {
	t.Helper()
	l, err := notifytest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	t.Setenv("NOTIFY_SOCKET", l.Path)
	return l
}

func next(t *testing.T, l *notifytest.Listener) notifytest.Message {
	t.Helper()
	m, err := l.Next(wait)
	if err != nil {
		t.Fatalf("waiting for a notification: %v", err)
	}
	if m.PID != int32(os.Getpid()) {
		t.Errorf("sender pid %d (from SCM_CREDENTIALS), want this process %d", m.PID, os.Getpid())
	}
	return m
}

// The full life of a Type=notify service as DESIGN.md section 4 describes
// it, received by a socket that checks credentials as systemd does.
func TestNotify_4_LifecycleInOrder(t *testing.T) {
	l := listen(t)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	logger, _ := testLogger()
	n := New(logger)
	if !n.Enabled() {
		t.Fatal("Enabled() = false with NOTIFY_SOCKET set")
	}

	status := "16 ports on 10 NICs monitored; all healthy"
	if err := n.Ready(status); err != nil {
		t.Fatal(err)
	}
	m := next(t, l)
	if !m.Has("READY", "1") || !m.Has("STATUS", status) {
		t.Fatalf("first message %q, want READY=1 and STATUS=%s", m.Raw, status)
	}

	// Unchanged status: nothing is sent, so the next datagram is the new one.
	if err := n.Status(status); err != nil {
		t.Fatal(err)
	}
	fatal := "16 ports on 10 NICs monitored; 1 fatal: Port mlx5_3 port 1: state DOWN, phys_state Disabled"
	if err := n.Status(fatal); err != nil {
		t.Fatal(err)
	}
	if m := next(t, l); m.Raw != "STATUS="+fatal {
		t.Fatalf("got %q, want STATUS=%s (an unchanged status must not be resent)", m.Raw, fatal)
	}

	if err := n.Watchdog(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, l); m.Raw != "WATCHDOG=1" {
		t.Fatalf("got %q, want WATCHDOG=1", m.Raw)
	}

	if err := n.Reloading(); err != nil {
		t.Fatal(err)
	}
	m = next(t, l)
	if !m.Has("RELOADING", "1") {
		t.Fatalf("got %q, want RELOADING=1", m.Raw)
	}
	usec, ok := m.Get("MONOTONIC_USEC")
	if v, err := strconv.ParseUint(usec, 10, 64); !ok || err != nil || v == 0 {
		t.Fatalf("got %q, want MONOTONIC_USEC=<positive integer>", m.Raw)
	}
	if strings.Contains(m.Raw, "\n\n") {
		t.Errorf("reload notice %q has an empty line", m.Raw)
	}

	if err := n.Ready(""); err != nil {
		t.Fatal(err)
	}
	if m := next(t, l); m.Raw != "READY=1" {
		t.Fatalf("got %q, want READY=1 after the reload", m.Raw)
	}

	if err := n.Stopping(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, l); m.Raw != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1", m.Raw)
	}
}

func TestNotify_4_NotRunBySystemdIsNoop(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	n := New(nil)
	if n.Enabled() {
		t.Error("Enabled() = true without NOTIFY_SOCKET")
	}
	for name, f := range map[string]func() error{
		"Ready":     func() error { return n.Ready("x") },
		"Status":    func() error { return n.Status("y") },
		"Reloading": n.Reloading,
		"Stopping":  n.Stopping,
		"Watchdog":  n.Watchdog,
	} {
		if err := f(); err != nil {
			t.Errorf("%s without NOTIFY_SOCKET: %v, want nil", name, err)
		}
	}
	if got := n.WatchdogInterval(); got != 0 {
		t.Errorf("WatchdogInterval() = %v, want 0", got)
	}
}

func TestNotify_4_SocketGoneIsAnError(t *testing.T) {
	missing := t.TempDir() + "/gone.sock"
	t.Setenv("NOTIFY_SOCKET", missing)
	n := New(nil)
	err := n.Ready("up")
	if err == nil {
		t.Fatal("Ready to a missing socket returned nil")
	}
	if !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "READY=1") {
		t.Errorf("error %q should name the socket and the message", err)
	}
	// A failed status is not remembered: once the socket is back it is sent.
	l := listen(t)
	if err := n.Status("up"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, l); m.Raw != "STATUS=up" {
		t.Errorf("got %q, want STATUS=up", m.Raw)
	}
}

func TestNotify_4_StatusIsOneLine(t *testing.T) {
	l := listen(t)
	n := New(nil)
	if err := n.Status("a\nb\r\n  c "); err != nil {
		t.Fatal(err)
	}
	if m := next(t, l); m.Raw != "STATUS=a b c" {
		t.Errorf("got %q, want STATUS=a b c", m.Raw)
	}
}

func TestNotify_4_WatchdogInterval(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	tests := []struct {
		name, usec, pid string
		want            time.Duration
		logged          bool
	}{
		{"disabled", "", "", 0, false},
		{"enabled, half the timeout", "30000000", "", 15 * time.Second, false},
		{"enabled for this pid", "4000000", pid, 2 * time.Second, false},
		{"watches another pid", "4000000", "1", 0, false},
		{"malformed", "30s", "", 0, true},
		{"zero", "0", "", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tc.usec)
			t.Setenv("WATCHDOG_PID", tc.pid)
			logger, buf := testLogger()
			n := New(logger)
			if got := n.WatchdogInterval(); got != tc.want {
				t.Errorf("WatchdogInterval() = %v, want %v", got, tc.want)
			}
			if got := n.WatchdogTimeout(); got != 2*tc.want {
				t.Errorf("WatchdogTimeout() = %v, want %v", got, 2*tc.want)
			}
			if logged := strings.Contains(buf.String(), "WatchdogSec="); logged != tc.logged {
				t.Errorf("warning logged = %v, want %v; log: %s", logged, tc.logged, buf.String())
			}
		})
	}
}

// The gate of DESIGN.md section 4, step by step: a ping only follows
// progress, and a loop that stops progressing stops the pings.
func TestWatchdog_4_PingOnlyAfterProgress(t *testing.T) {
	l := listen(t)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", "")
	logger, logs := testLogger()
	w := NewProgressWatchdog(New(logger), WatchdogOptions{})

	steps := []struct {
		progress bool
		wantSent bool
	}{
		{false, false}, // started, first poll not complete yet
		{true, true},
		{false, false}, // wedged
		{false, false},
		{true, true}, // progressing again
		{true, true},
	}
	for i, s := range steps {
		if s.progress {
			w.Progress()
		}
		sent, err := w.Tick()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if sent != s.wantSent {
			t.Fatalf("step %d: sent = %v, want %v", i, sent, s.wantSent)
		}
		if sent {
			if m := next(t, l); m.Raw != "WATCHDOG=1" {
				t.Fatalf("step %d: got %q, want WATCHDOG=1", i, m.Raw)
			}
		}
	}
	if got := l.Count("WATCHDOG", "1"); got != 3 {
		t.Errorf("%d pings received, want 3", got)
	}
	if c := strings.Count(logs.String(), "withholding"); c != 2 {
		t.Errorf("stall logged %d times, want once per stall (2); log:\n%s", c, logs.String())
	}
}

func TestWatchdog_4_SendFailureKeepsProgressPending(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", t.TempDir()+"/gone.sock")
	t.Setenv("WATCHDOG_USEC", "2000000")
	w := NewProgressWatchdog(New(nil), WatchdogOptions{})
	w.Progress()
	if sent, err := w.Tick(); sent || err == nil {
		t.Fatalf("Tick to a missing socket = (%v, %v), want (false, error)", sent, err)
	}
	l := listen(t)
	if sent, err := w.Tick(); !sent || err != nil {
		t.Fatalf("Tick after the socket came back = (%v, %v), want (true, nil)", sent, err)
	}
	next(t, l)
}

// Run with a real ticker: pings flow while the loop progresses and stop when
// it wedges. Ticks are counted through the test hook, never timed.
func TestWatchdog_4_WedgedLoopStopsPings(t *testing.T) {
	l := listen(t)
	t.Setenv("WATCHDOG_USEC", "10000") // ping every 5 ms
	t.Setenv("WATCHDOG_PID", "")
	w := NewProgressWatchdog(New(nil), WatchdogOptions{})
	ticks := make(chan bool, 1024)
	w.afterTick = func(sent bool) { ticks <- sent }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	// A progressing loop: each completed cycle is followed by a ping.
	for i := 0; i < 3; i++ {
		w.Progress()
		if _, err := l.WaitFor(wait, func(m notifytest.Message) bool { return m.Raw == "WATCHDOG=1" }); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
	}

	// Wedge. Ticks queued before the last ping predate it; drop them, then
	// wait for the tick that withholds, then several more ticks.
	for drained := false; !drained; {
		select {
		case <-ticks:
		default:
			drained = true
		}
	}
	// Bounded twice over, so a watchdog that pings on a timer whatever the
	// loop does fails here instead of spinning until the test binary's
	// timeout: by ticks (a wedged loop must be noticed within a handful of
	// them) and by time.
	deadline := time.After(wait)
	for n, sent := 0, true; sent; n++ {
		if n == 1000 {
			t.Fatal("1000 ticks after the loop wedged, every tick still pinged")
		}
		select {
		case sent = <-ticks:
		case <-deadline:
			t.Fatal("no tick withheld its ping after the loop wedged")
		}
	}
	before := l.Count("WATCHDOG", "1")
	for i := 0; i < 5; i++ {
		select {
		case sent := <-ticks:
			if sent {
				t.Fatal("a ping was sent while the loop made no progress")
			}
		case <-time.After(wait):
			t.Fatal("no tick")
		}
	}
	if after := l.Count("WATCHDOG", "1"); after != before {
		t.Fatalf("pings went from %d to %d without progress", before, after)
	}

	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

func TestWatchdog_4_RunReturnsWhenDisabled(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	w := NewProgressWatchdog(New(nil), WatchdogOptions{})
	if err := w.Run(context.Background()); err != nil {
		t.Errorf("Run with the watchdog off = %v, want nil at once", err)
	}
	if w.Interval() != 0 {
		t.Errorf("Interval() = %v, want 0", w.Interval())
	}
}

func TestWatchdog_4_Stalled(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(stall time.Duration) *ProgressWatchdog {
		w := NewProgressWatchdog(New(nil), WatchdogOptions{StallAfter: stall})
		w.now = func() time.Time { return clock }
		w.started = clock
		return w
	}

	w := mk(3 * time.Second)
	if w.Stalled() || !w.LastProgress().IsZero() {
		t.Fatal("a fresh watchdog is stalled or has progress")
	}
	clock = clock.Add(4 * time.Second)
	if !w.Stalled() {
		t.Error("no first cycle within StallAfter: want Stalled")
	}
	w.Progress()
	if w.Stalled() || !w.LastProgress().Equal(clock) {
		t.Errorf("after Progress: Stalled=%v LastProgress=%v", w.Stalled(), w.LastProgress())
	}
	clock = clock.Add(3 * time.Second)
	if w.Stalled() {
		t.Error("exactly StallAfter since progress: not yet stalled")
	}
	clock = clock.Add(time.Millisecond)
	if !w.Stalled() {
		t.Error("past StallAfter: want Stalled")
	}

	// No threshold known (watchdog off, StallAfter 0): never stalled.
	w = mk(0)
	clock = clock.Add(time.Hour)
	if w.Stalled() {
		t.Error("Stalled() = true with no threshold")
	}
}

func TestWatchdog_4_StallDefaultsToWatchdogTimeout(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "6000000")
	t.Setenv("WATCHDOG_PID", "")
	w := NewProgressWatchdog(New(nil), WatchdogOptions{})
	if w.stallAfter != 6*time.Second {
		t.Errorf("stallAfter = %v, want the full WATCHDOG_USEC (6s)", w.stallAfter)
	}
}
