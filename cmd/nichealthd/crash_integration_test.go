package main

// End-to-end crash and fault-safety tests: SIGKILL at random points, a
// state directory that refuses writes, sysfs files that vanish or read
// garbage, and a device renamed under the daemon. The product's promise
// (DESIGN.md section 3) is that none of these crash it or lose an event,
// and that a latched breach is never forgotten.

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/ports"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"

	"github.com/nichealth/nichealthd/internal/component"
)

// killHard SIGKILLs the daemon and fails the test if it had already exited
// by itself (a crash, or a start-up refusal such as a stale outbox lock).
func (n *node) killHard(round int) {
	n.t.Helper()
	n.cmd.Process.Kill()
	err := n.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		n.t.Fatalf("round %d: daemon wait: %v\n%s", round, err, n.stderr.Tail())
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		n.t.Fatalf("round %d: daemon exited by itself before the kill (%v):\n%s", round, err, n.stderr.Tail())
	}
}

// memory is what the counter and port checks remember.
type memory struct {
	Counters *counters.Memory
	Ports    *ports.PortMemory
}

// memoryOf reads the checks' sections of a state file as the daemon does.
func memoryOf(st *persist.State) memory {
	c := counters.NewCheck(nil, false)
	c.Restore(st.Section(counters.Section))
	p := ports.New(slog.New(slog.DiscardHandler), nil)
	p.Restore(st.Section(ports.Section))
	return memory{Counters: c.Memory(), Ports: p.Memory()}
}

func latched(st *persist.State) []string {
	var out []string
	for k, f := range memoryOf(st).Counters.BreachFlags {
		if f.Breached {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// portLines keeps the log lines about the given devices and the daemon's
// life cycle.
func portLines(log string, devs []string) string {
	var sb strings.Builder
	for _, l := range strings.SplitAfter(log, "\n") {
		keep := strings.HasPrefix(l, "---") || strings.Contains(l, "state loaded") || strings.Contains(l, "first poll")
		for _, d := range devs {
			keep = keep || strings.Contains(l, "device="+d+" ")
		}
		if keep && !strings.Contains(l, "msg=NIC ") && !strings.Contains(l, "counter availability") {
			sb.WriteString(l)
		}
	}
	return sb.String()
}

func loadState(t *testing.T, path string, round int) *persist.State {
	t.Helper()
	st, status, err := persist.Load(path)
	if err != nil || status != persist.LoadLoaded {
		t.Fatalf("round %d: state file %s: status %v err %v", round, path, status, err)
	}
	return st
}

// TestIntegration_Crash_RandomSIGKILLs kills the daemon ten times at random
// points (start-up included) while ports flap and counters move. After
// every kill the state file loads and no latch it held is gone; after the
// last restart the daemon converges on the host's real state, and the
// breach latched before the first kill was reported once and never
// recovered.
func TestIntegration_Crash_RandomSIGKILLs(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x6e6963))
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	if err := n.h.AddCounter("mlx5_5", 1, "counters/link_downed", 1); err != nil {
		t.Fatal(err)
	}
	breach := n.waitEvent("link_downed breach", func(e event.Event) bool {
		return e.Device() == "mlx5_5" && e.Kind == event.KindCounterBreach && e.Metadata["counter"] == "link_downed"
	})
	n.stop()
	prev := latched(loadState(t, n.state, -1))
	if !slices.Contains(prev, counters.Key("mlx5_5", 1, "link_downed")) {
		t.Fatalf("breach not latched in the state file: %v", prev)
	}

	flappers := []string{"mlx5_1", "mlx5_2", "mlx5_3"}
	// Every round's log, for the post-mortem of a failure.
	var history strings.Builder
	down := map[string]bool{}
	for round := 0; round < 10; round++ {
		n.start()
		end := time.Now().Add(time.Duration(rng.IntN(700)) * time.Millisecond)
		for time.Now().Before(end) {
			switch rng.IntN(4) {
			case 0, 1:
				dev := flappers[rng.IntN(len(flappers))]
				down[dev] = !down[dev]
				st, phys := "ACTIVE", "LinkUp"
				if down[dev] {
					st, phys = "DOWN", "Disabled"
				}
				if err := n.h.SetPortState(dev, 1, st, phys); err != nil {
					t.Fatal(err)
				}
			case 2:
				if err := n.h.AddCounter("mlx5_4", 1, "counters/symbol_error", uint64(1+rng.IntN(5))); err != nil {
					t.Fatal(err)
				}
			case 3:
				if err := n.h.AddCounter("mlx5_6", 1, "counters/link_downed", 1); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
		}
		n.killHard(round)
		history.WriteString(fmt.Sprintf("--- round %d (killed) ---\n%s", round, n.stderr.String()))
		now := latched(loadState(t, n.state, round))
		for _, k := range prev {
			if !slices.Contains(now, k) {
				t.Fatalf("round %d: latch %s lost by the kill (before %v, after %v)", round, k, prev, now)
			}
		}
		prev = now
	}

	n.start()
	n.waitReadyLog()
	deadline := time.Now().Add(waitDeadline)
	for {
		evs := n.read()
		var wrong []string
		for _, dev := range flappers {
			last := event.Kind("")
			for _, e := range evs {
				if e.Device() == dev && (e.Kind == event.KindPortFatal || e.Kind == event.KindPortRecovered) {
					last = e.Kind
				}
			}
			if down[dev] != (last == event.KindPortFatal) {
				wrong = append(wrong, dev+" last "+string(last))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kills the reported state does not match the host (down %v): %v\nevents:%s\nlogs:\n%s--- final run ---\n%s",
				down, wrong, summary(evs), portLines(history.String(), flappers), portLines(n.stderr.String(), flappers))
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
	evs := n.read()
	ids := map[string]bool{}
	for _, e := range evs {
		if e.Device() == "mlx5_5" && e.Kind == event.KindCounterBreach {
			ids[e.ID] = true
		}
	}
	if len(ids) != 1 || !ids[breach.ID] {
		t.Fatalf("the latched mlx5_5 breach was reported again under new ids: %v", ids)
	}
	if c := count(evs, func(e event.Event) bool { return e.Kind == event.KindCounterRecovered }); c != 0 {
		t.Fatalf("a latch recovered without a reset or acknowledgement: %s", summary(evs))
	}
	if st := loadState(t, n.state, 10); !slices.Contains(latched(st), counters.Key("mlx5_5", 1, "link_downed")) {
		t.Fatalf("latch gone at the end: %v", latched(st))
	}
}

// TestIntegration_Crash_StateDirRefusesWrites: the state directory turns
// read-only (immutable, which binds root too) or the disk fills up (file
// size limit on the daemon: every append fails with EFBIG as on a full
// disk). A fault in the meantime is delayed, not lost, and reported once
// when writes work again.
func TestIntegration_Crash_StateDirRefusesWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		block   func(t *testing.T, n *node)
		unblock func(t *testing.T, n *node)
	}{
		{"ReadOnly", func(t *testing.T, n *node) {
			dir := filepath.Dir(n.state)
			if out, err := exec.Command("chattr", "-R", "+i", dir).CombinedOutput(); err != nil {
				component.Missing(t, "cannot make %s immutable (chattr needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs): %v %s", dir, err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-R", "-i", dir).Run() })
		}, func(t *testing.T, n *node) {
			if out, err := exec.Command("chattr", "-R", "-i", filepath.Dir(n.state)).CombinedOutput(); err != nil {
				t.Fatalf("chattr -i: %v %s", err, out)
			}
		}},
		{"DiskFull", func(t *testing.T, n *node) {
			lim := unix.Rlimit{Cur: 1, Max: unix.RLIM_INFINITY}
			if err := unix.Prlimit(n.cmd.Process.Pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
				component.Missing(t, "cannot limit the daemon's file size: %v", err)
			}
		}, func(t *testing.T, n *node) {
			lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
			if err := unix.Prlimit(n.cmd.Process.Pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath("chattr"); err != nil && tc.name == "ReadOnly" {
				component.Missing(t, "chattr not installed")
			}
			n := newNode(t, "dgx-h100", "")
			n.writeIntegConfig(integConfig{})
			n.withMetrics()
			n.start()
			n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
			// Everything already emitted is written out before the block.
			n.waitLog("the first poll", func(l string) bool { return strings.Contains(l, "first poll complete") })
			n.waitDrained()
			tc.block(t, n)
			before := len(n.read())
			if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
				t.Fatal(err)
			}
			n.waitLog("the failed append", func(l string) bool { return strings.Contains(l, "cannot append events to the outbox") })
			if c := count(n.read()[before:], portEvent("mlx5_3", event.KindPortFatal)); c != 0 {
				t.Fatal("an event went out that is not durable")
			}
			tc.unblock(t, n)
			n.waitEventAfter(before, "the delayed fault", portEvent("mlx5_3", event.KindPortFatal))
			n.h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp")
			n.waitEventAfter(before, "its recovery", portEvent("mlx5_3", event.KindPortRecovered))
			n.stop()
			loadState(t, n.state, 0)
			if c := count(n.read(), portEvent("mlx5_3", event.KindPortFatal)); c != 1 {
				t.Fatalf("fault reported %d times: %s", c, summary(n.read()))
			}
		})
	}
}

// TestIntegration_Crash_VanishingAndGarbledSysfsFiles: a counter file and a
// port state file vanish mid-run, and a counter reads "N/A (no PMA)". No
// crash, no event for them, the rest stays monitored; when the files come
// back they are monitored again.
func TestIntegration_Crash_VanishingAndGarbledSysfsFiles(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{})
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	before := len(n.read())
	if err := n.h.RemoveFile("mlx5_0", 1, "counters/symbol_error"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.RemoveFile("mlx5_1", 1, "state"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.WriteRaw("mlx5_2", 1, "counters/link_downed", "N/A (no PMA)\n"); err != nil {
		t.Fatal(err)
	}
	// Whole polls run without the files before anything else changes.
	n.waitPolls(2)
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(before, "fault while files are missing", portEvent("mlx5_3", event.KindPortFatal))
	for _, e := range n.read()[before:] {
		if d := e.Device(); d == "mlx5_0" || d == "mlx5_1" || d == "mlx5_2" {
			t.Fatalf("event for a vanished or garbled file: %s", summary([]event.Event{e}))
		}
	}

	// Back again.
	// A value no earlier reading had, so that the daemon reading it is
	// observable (7 over a full window is below 10/s: no breach).
	if err := n.h.WriteRaw("mlx5_0", 1, "counters/symbol_error", "7\n"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.WriteRaw("mlx5_1", 1, "state", "4: ACTIVE\n"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.WriteRaw("mlx5_2", 1, "counters/link_downed", "1\n"); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(before, "link_downed breach after N/A", func(e event.Event) bool {
		return e.Device() == "mlx5_2" && e.Kind == event.KindCounterBreach && e.Metadata["counter"] == "link_downed"
	})
	if err := n.h.SetPortState("mlx5_1", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(before, "fault on the restored state file", portEvent("mlx5_1", event.KindPortFatal))
	// The restored file is monitored again (its value read) before the
	// burst; otherwise the burst would be the first reading, a baseline.
	n.waitCounterValue("mlx5_0", 1, "symbol_error", 7)
	if err := n.h.AddCounter("mlx5_0", 1, "counters/symbol_error", 50000); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(before, "symbol_error breach on the restored file", symbolBreach("mlx5_0"))
	n.stop()
	if c := count(n.read(), func(e event.Event) bool { return e.Kind == event.KindDeviceDisappeared }); c != 0 {
		t.Fatalf("a missing file counted as a vanished device: %s", summary(n.read()))
	}
}

// TestIntegration_Crash_DeviceRenamed: an RDMA device changes its name
// under the daemon (names are not stable, DESIGN.md section 2; rdma-core
// can rename a device at run time). The daemon must not crash and must keep
// monitoring the port under its new name. What it reports about the old
// name is logged for the record, not asserted: today the old name is
// reported disappeared (fatal) after three enumerations and stays so.
func TestIntegration_Crash_DeviceRenamed(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_3", event.KindPortBaseline))
	before := len(n.read())
	if err := n.h.RenameDevice("mlx5_3", "mlx5_30"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.SetPortState("mlx5_30", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	e := n.waitEventAfter(before, "fault under the new name", portEvent("mlx5_30", event.KindPortFatal))
	if e.Message != "Port mlx5_30 port 1: state DOWN, phys_state Disabled" || e.RecommendedAction != event.ActionReplaceVM {
		t.Fatalf("fault under the new name: %+v", e)
	}
	if err := n.h.SetPortState("mlx5_30", 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(before, "recovery under the new name", portEvent("mlx5_30", event.KindPortRecovered))
	n.stop()
	ports := memoryOf(loadState(t, n.state, 0)).Ports
	t.Logf("events after renaming mlx5_3 to mlx5_30:%s\nstate: known %v, disappeared %v",
		summary(n.read()[before:]), ports.KnownDevices, ports.Disappeared)
	if !slices.Contains(ports.KnownDevices, "mlx5_30") {
		t.Fatalf("mlx5_30 not a known device: %v", ports.KnownDevices)
	}
}

// TestIntegration_Crash_KillWhileStateUnsaved: the state file cannot be
// saved (its directory refuses new files; the outbox below it still
// works), so a port transition goes out to the sinks while the state on
// disk still holds the previous verdict. The daemon is then killed and the
// port changes back before it restarts. Whatever consumers were told last
// must be corrected by the restarted daemon: a healed port left "fatal"
// condemns a working node, a failed port left "recovered" is a lost fault.
// Random SIGKILLs between the outbox append and the state save (see
// TestIntegration_Crash_RandomSIGKILLs) hit the same window by chance.
func TestIntegration_Crash_KillWhileStateUnsaved(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("chattr"); err != nil {
		component.Missing(t, "chattr not installed")
	}
	for _, tc := range []struct {
		name                  string
		committed, unsaved    string // port state saved, then sent but not saved
		want                  event.Kind
		wantWhat, unsavedKind string
	}{
		{"HealedWhileDown", "ACTIVE", "DOWN", event.KindPortRecovered, "recovered", "fatal"},
		{"FailedAgainWhileDown", "DOWN", "ACTIVE", event.KindPortFatal, "fatal", "recovered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phys := map[string]string{"DOWN": "Disabled", "ACTIVE": "LinkUp"}
			unsavedEv := map[string]event.Kind{"DOWN": event.KindPortFatal, "ACTIVE": event.KindPortRecovered}
			n := newNode(t, "dgx-h100", "")
			n.writeIntegConfig(integConfig{})
			n.start()
			n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
			if tc.committed == "DOWN" {
				n.h.SetPortState("mlx5_1", 1, "DOWN", "Disabled")
				n.waitEvent("committed fatal", portEvent("mlx5_1", event.KindPortFatal))
			}
			n.stop()

			dir := filepath.Dir(n.state)
			// Not recursive: the outbox directory below stays writable.
			if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
				component.Missing(t, "cannot make %s immutable (chattr needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs): %v %s", dir, err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
			n.start()
			n.waitReadyLog()
			before := len(n.read())
			if err := n.h.SetPortState("mlx5_1", 1, tc.unsaved, phys[tc.unsaved]); err != nil {
				t.Fatal(err)
			}
			n.waitEventAfter(before, "unsaved transition", portEvent("mlx5_1", unsavedEv[tc.unsaved]))
			n.waitLog("the failed save", func(l string) bool { return strings.Contains(l, "cannot save state") })
			n.killHard(0)
			if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
				t.Fatalf("chattr -i: %v %s", err, out)
			}

			if err := n.h.SetPortState("mlx5_1", 1, tc.committed, phys[tc.committed]); err != nil {
				t.Fatal(err)
			}
			n.start()
			n.waitReadyLog()
			// A later fault elsewhere is the sync point.
			if err := n.h.SetPortState("mlx5_4", 1, "DOWN", "Disabled"); err != nil {
				t.Fatal(err)
			}
			n.waitEventAfter(before, "fatal mlx5_4", portEvent("mlx5_4", event.KindPortFatal))
			n.stop()
			evs := n.read()
			last := event.Kind("")
			for _, e := range evs {
				if e.Device() == "mlx5_1" && (e.Kind == event.KindPortFatal || e.Kind == event.KindPortRecovered) {
					last = e.Kind
				}
			}
			if last != tc.want {
				t.Fatalf("mlx5_1 is %s, consumers were last told %s before the kill, and the restarted daemon never said %s (last event %q):%s",
					tc.committed, tc.unsavedKind, tc.wantWhat, last, summary(evs[before:]))
			}
		})
	}
}
