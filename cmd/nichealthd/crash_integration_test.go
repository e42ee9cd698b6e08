package main

// End-to-end crash and fault-safety tests: SIGKILL at random points, a
// state directory that refuses writes, sysfs files that vanish or read
// garbage, and a device renamed under the daemon. The product's promise
// (DESIGN.md section 3) is that none of these crash it or lose an event,
// and that a latched breach is never forgotten.

import (
	"errors"
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
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/persist"
)

// killHard SIGKILLs the daemon and fails the test if it had already exited
// by itself (a crash, or a start-up refusal such as a stale outbox lock).
func (n *node) killHard(round int) {
	n.t.Helper()
	n.cmd.Process.Kill()
	err := n.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		n.t.Fatalf("round %d: daemon wait: %v\n%s", round, err, n.stderr.String())
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		n.t.Fatalf("round %d: daemon exited by itself before the kill (%v):\n%s", round, err, n.stderr.String())
	}
}

func latched(st *persist.State) []string {
	var out []string
	for k, f := range st.BreachFlags {
		if f.Breached {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
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
	deadline := time.Now().Add(15 * time.Second)
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
			t.Fatalf("after the kills the reported state does not match the host (down %v): %v\n%s", down, wrong, summary(evs))
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
				t.Skipf("cannot make %s immutable (chattr needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs): %v %s", dir, err, out)
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
				t.Skipf("cannot limit the daemon's file size: %v", err)
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
				t.Skip("chattr not installed")
			}
			n := newNode(t, "dgx-h100", "")
			n.writeIntegConfig(integConfig{})
			n.start()
			n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
			// Everything already emitted is written out before the block.
			n.waitLog("the first poll", func(l string) bool { return strings.Contains(l, "first poll complete") })
			time.Sleep(300 * time.Millisecond)
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
	// Sync point: a fault elsewhere is detected, so polls ran meanwhile.
	time.Sleep(300 * time.Millisecond)
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
	if err := n.h.WriteRaw("mlx5_0", 1, "counters/symbol_error", "0\n"); err != nil {
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
	time.Sleep(300 * time.Millisecond)
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
// under the daemon (names are not stable, DESIGN.md section 2). The daemon
// must not crash and must keep monitoring the port under its new name; the
// events it emits for the rename are logged for the record.
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
	n.waitEventAfter(before, "the old name disappearing", portEvent("mlx5_3", event.KindDeviceDisappeared))
	mark := len(n.read())
	if err := n.h.SetPortState("mlx5_30", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	e := n.waitEventAfter(mark, "fault under the new name", portEvent("mlx5_30", event.KindPortFatal))
	if e.Message != "Port mlx5_30 port 1: state DOWN, phys_state Disabled" {
		t.Fatalf("fault under the new name: %+v", e)
	}
	n.stop()
	t.Logf("events after renaming mlx5_3 to mlx5_30:%s", summary(n.read()[before:]))
	// The new name must be monitored (not excluded or left unclassified).
	if !strings.Contains(n.stderr.String(), "device=mlx5_30") {
		t.Fatalf("mlx5_30 never mentioned in the log:\n%s", n.stderr.String())
	}
}
