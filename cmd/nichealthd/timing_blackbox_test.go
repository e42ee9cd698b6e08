package main

// Black-box timing tests: discovery bounded by readTimeout, stuck reads
// cleared, reloads that neither re-read a hung file nor leak threads, the
// 1 s counter tick, and velocity windows that survive SIGKILL.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/systemd/notify/notifytest"
)

// releaseFIFO lets a reader blocked in open() on a sim FIFO return, and
// puts the regular file back so the next read succeeds: opening the FIFO
// for writing pairs with the blocked open, the sim then renames the
// regular file over the path, and closing the writer ends the hung read.
func releaseFIFO(t *testing.T, n *node, dev string, port int, rel string) {
	t.Helper()
	p, err := n.h.PortPath(dev, port, rel)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open %s for writing: %v", p, err)
	}
	if err := n.h.UnmakeFIFO(dev, port, rel); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("0\n"))
	w.Close()
}

// threads reads the OS thread count of pid from /proc.
func threads(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("Threads line %q", l)
			}
			return n
		}
	}
	t.Fatalf("no Threads line in /proc/%d/status", pid)
	return 0
}

func fileEvent(kind event.Kind, dev, file string) func(e event.Event) bool {
	return func(e event.Event) bool {
		return e.Kind == kind && e.Device() == dev && e.Metadata["file"] == file
	}
}

// A port's state file hangs (a FIFO nobody writes) when the daemon starts:
// discovery pays one readTimeout for it, READY=1 follows the first poll,
// every other NIC gets its baseline, the hung file is reported as stuck,
// and once it answers again a read-recovered event clears it.
func TestTiming_FIFOStateAtStartupReadyStuckAndCleared(t *testing.T) {
	l, err := notifytest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := newNode(t, "dgx-h100", "")
	n.env = []string{l.Env()}
	fifo, err := n.h.PortPath("mlx5_1", 1, "state")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.h.MakeFIFO("mlx5_1", 1, "state"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n.start()
	if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatalf("no READY=1 with a hung state file: %v\n%s", err, n.stderr.String())
	}
	t.Logf("READY=1 %v after start (readTimeout 200ms, poll 100ms)", time.Since(start).Round(time.Millisecond))

	for _, dev := range []string{"mlx5_0", "mlx5_2", "mlx5_7", "mlx5_8"} {
		n.waitEvent("baseline of "+dev, portEvent(dev, event.KindPortBaseline))
	}
	stuck := n.waitEvent("read-stuck for the hung state file", fileEvent(event.KindReadStuck, "mlx5_1", fifo))
	if stuck.Port() != "1" || stuck.IsHealthy {
		t.Fatalf("stuck event %+v", stuck)
	}
	if c := count(n.read(), portEvent("mlx5_1", event.KindPortBaseline)); c != 0 {
		t.Fatalf("mlx5_1 baselined %d times while its state cannot be read", c)
	}
	// The rest of the node is judged while the file hangs.
	n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled")
	n.waitEvent("fatal while a read hangs", portEvent("mlx5_3", event.KindPortFatal))

	releaseFIFO(t, n, "mlx5_1", 1, "state")
	rec := n.waitEvent("read-recovered for the state file", fileEvent(event.KindReadRecovered, "mlx5_1", fifo))
	if !rec.IsHealthy || rec.IsFatal || rec.CheckName != stuck.CheckName || rec.Port() != stuck.Port() {
		t.Fatalf("recovered %+v does not clear stuck %+v", rec, stuck)
	}
	n.stop()
	if c := count(n.read(), func(e event.Event) bool { return e.Kind == event.KindReadStuck }); c != 1 {
		t.Fatalf("stuck reported %d times, want 1", c)
	}
}

// Fifty reloads, each changing readTimeout, while a counter file hangs:
// polling goes on (a port fault after the loop is still detected), the
// hung file is not read again (no second read-stuck), and the OS thread
// count stays flat (a fresh reader per reload used to strand one more
// thread on the hung file each time).
func TestTiming_ReloadLoopWithHungFileKeepsPollingAndThreadsFlat(t *testing.T) {
	l, err := notifytest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := newNode(t, "dgx-h100", "")
	n.env = []string{l.Env()}
	fifo, err := n.h.PortPath("mlx5_1", 1, "counters/symbol_error")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.h.MakeFIFO("mlx5_1", 1, "counters/symbol_error"); err != nil {
		t.Fatal(err)
	}
	n.start()
	if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatalf("READY: %v\n%s", err, n.stderr.String())
	}
	n.waitEvent("read-stuck", fileEvent(event.KindReadStuck, "mlx5_1", fifo))
	pid := n.cmd.Process.Pid
	before := threads(t, pid)

	for i := 0; i < 50; i++ {
		// readTimeout differs on every reload, so the reader is
		// reconfigured each time.
		n.writeConfig(fmt.Sprintf("readTimeout = %q\n", fmt.Sprintf("%dms", 150+i)))
		n.cmd.Process.Signal(syscall.SIGHUP)
		if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
			t.Fatalf("reload %d: no READY=1: %v\n%s", i, err, n.stderr.String())
		}
	}
	after := threads(t, pid)
	t.Logf("OS threads: %d before the reload loop, %d after 50 reloads", before, after)
	if after > before+2 {
		t.Fatalf("OS threads grew from %d to %d over 50 reloads with a hung file", before, after)
	}
	n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled")
	n.waitEvent("fatal after the reload loop", portEvent("mlx5_3", event.KindPortFatal))
	if c := count(n.read(), func(e event.Event) bool { return e.Kind == event.KindReadStuck }); c != 1 {
		t.Fatalf("stuck reported %d times over 50 reloads, want 1", c)
	}
	releaseFIFO(t, n, "mlx5_1", 1, "counters/symbol_error")
	n.waitEvent("read-recovered after the loop", fileEvent(event.KindReadRecovered, "mlx5_1", fifo))
	n.stop()
}
