package main

// Black-box timing tests: discovery bounded by readTimeout, stuck reads
// cleared, reloads that neither re-read a hung file nor leak threads, the
// 1 s counter tick, and velocity windows that survive SIGKILL.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
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

// writeReadTimeout rewrites the node's configuration with another
// readTimeout, atomically (the daemon watches the directory and must never
// read a half-written file).
func writeReadTimeout(t *testing.T, n *node, d time.Duration) {
	t.Helper()
	c := fmt.Sprintf(`sysfsRoot = %q
procfsRoot = %q
devRoot = %q
metadataPath = %q
readTimeout = %q
[sinks.jsonl]
path = %q
[sinks.journal]
enabled = false
[dbus]
enabled = false
`, n.h.SysRoot(), n.h.ProcRoot(), n.h.DevRoot(), n.h.MetadataPath(), d.String(), n.events)
	tmp := n.cfg + ".tmp"
	if err := os.WriteFile(tmp, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.cfg); err != nil {
		t.Fatal(err)
	}
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
	t.Parallel()
	n, l := newNotifiedNode(t)
	fifo := n.makeFIFO("mlx5_1", 1, "state")
	start := time.Now()
	n.start()
	if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatalf("no READY=1 with a hung state file: %v\n%s", err, n.stderr.Tail())
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

// Fifty reloads, each changing readTimeout, while a file read every poll
// (a port's rate) and a counter file read every tick hang: every reload is applied and followed by polls,
// the hung file is not read again (one read-stuck in all), the OS thread
// count stays flat (a fresh reader per reload used to forget the hung read,
// read the file again and strand one more thread on it each time), and a
// port fault after the loop is still detected.
func TestTiming_ReloadLoopWithHungFileKeepsPollingAndThreadsFlat(t *testing.T) {
	t.Parallel()
	// Watchdog pings are sent only after poll progress: two pings after a
	// reload's READY=1 prove that a poll ran under the new configuration.
	n, l := newNotifiedNode(t, "WATCHDOG_USEC=100000", "WATCHDOG_PID=")
	fifo := n.makeFIFO("mlx5_1", 1, "rate")
	counterFifo := n.makeFIFO("mlx5_2", 1, "counters/symbol_error")
	n.start()
	if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatalf("READY: %v\n%s", err, n.stderr.Tail())
	}
	n.waitEvent("read-stuck", fileEvent(event.KindReadStuck, "mlx5_1", fifo))
	n.waitEvent("read-stuck of the counter", fileEvent(event.KindReadStuck, "mlx5_2", counterFifo))
	pid := n.cmd.Process.Pid
	before := threads(t, pid)

	polled := func(what string) {
		t.Helper()
		for i := 0; i < 2; i++ {
			if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("WATCHDOG", "1") }); err != nil {
				t.Fatalf("%s: no poll progress: %v\n%s", what, err, n.stderr.Tail())
			}
		}
	}
	polled("before the reloads")
	for i := 0; i < 50; i++ {
		// readTimeout differs on every reload, so the reader is
		// reconfigured each time.
		writeReadTimeout(t, n, time.Duration(150+i)*time.Millisecond)
		n.cmd.Process.Signal(syscall.SIGHUP)
		if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
			t.Fatalf("reload %d: no READY=1: %v\n%s", i, err, n.stderr.Tail())
		}
		polled(fmt.Sprintf("reload %d", i))
	}
	if strings.Contains(n.stderr.String(), "configuration refused") {
		t.Fatalf("a reload was refused; the loop did not change readTimeout:\n%s", n.stderr.Tail())
	}
	after := threads(t, pid)
	t.Logf("OS threads: %d before the reload loop, %d after 50 reloads", before, after)
	if after > before+2 {
		t.Fatalf("OS threads grew from %d to %d over 50 reloads with a hung file", before, after)
	}
	n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled")
	n.waitEvent("fatal after the reload loop", portEvent("mlx5_3", event.KindPortFatal))
	if c := count(n.read(), func(e event.Event) bool { return e.Kind == event.KindReadStuck }); c != 2 {
		t.Fatalf("stuck reported %d times over 50 reloads, want 2 (once per hung file)", c)
	}
	releaseFIFO(t, n, "mlx5_1", 1, "rate")
	n.waitEvent("read-recovered after the loop", fileEvent(event.KindReadRecovered, "mlx5_1", fifo))
	releaseFIFO(t, n, "mlx5_2", 1, "counters/symbol_error")
	n.waitEvent("counter read-recovered after the loop", fileEvent(event.KindReadRecovered, "mlx5_2", counterFifo))
	n.stop()
}

func counterBreach(dev, counter string) func(e event.Event) bool {
	return func(e event.Event) bool {
		return e.Kind == event.KindCounterBreach && e.Device() == dev && e.Metadata["counter"] == counter
	}
}

func metaFloat(t *testing.T, e event.Event, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.Metadata[key], 64)
	if err != nil {
		t.Fatalf("metadata %s=%q: %v", key, e.Metadata[key], err)
	}
	return v
}

func metaDuration(t *testing.T, e event.Event, key string) time.Duration {
	t.Helper()
	v, err := time.ParseDuration(e.Metadata[key])
	if err != nil {
		t.Fatalf("metadata %s=%q: %v", key, e.Metadata[key], err)
	}
	return v
}

// Seed state 12.1: counters are judged on a 1 s tick whatever the state
// poll. At the black-box nodes' 100 ms poll, carrier_changes rising by 2
// three times within 0.4 s never exceeds "> 2" between two polls; however
// a tick boundary falls, one 1 s tick sees at least +4 and breaches.
func TestTiming_CarrierChangesBurstAtFastPollBreachesPerTick(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	const netdev = "enp65s0f0np0" // mlx5_8
	if err := n.h.SetCarrierChanges(netdev, 4); err != nil {
		t.Fatal(err)
	}
	n.start() // --state-polling-interval 100ms
	// The baselines come from the first tick, which read 4.
	n.waitEvent("counter baselines", portEvent("mlx5_8", event.KindCounterBaseline))
	for v := uint64(6); v <= 10; v += 2 {
		if err := n.h.SetCarrierChanges(netdev, v); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b := n.waitEvent("carrier_changes breach", counterBreach("mlx5_8", "carrier_changes"))
	if b.Metadata["threshold"] != "2" || b.Metadata["thresholdType"] != "delta" {
		t.Fatalf("breach %+v", b)
	}
	if d, _ := strconv.Atoi(b.Metadata["delta"]); d < 4 {
		t.Fatalf("breach over one tick with delta %d, want at least 4", d)
	}
}

// Seed 10.4 step 5: link_downed +1 after a quiet period prints the rate
// over the 1 s tick that saw it (about 1/sec), not since the value last
// changed (0.2/sec after 5 s, 0.02/sec after 49 s).
func TestTiming_LinkDownedAfterQuietPrintsPerTickRate(t *testing.T) {
	t.Parallel() // mostly waiting for the window or the quiet period to pass
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("counter baselines", portEvent("mlx5_6", event.KindCounterBaseline))
	time.Sleep(5 * time.Second) // quiet
	if err := n.h.AddCounter("mlx5_6", 1, "counters/link_downed", 1); err != nil {
		t.Fatal(err)
	}
	b := n.waitEvent("link_downed breach", counterBreach("mlx5_6", "link_downed"))
	el, rate := metaDuration(t, b, "elapsed"), metaFloat(t, b, "rate")
	if el >= 2*time.Second || rate < 0.5 || b.Metadata["delta"] != "1" {
		t.Fatalf("link_downed +1 judged over %v at rate %v/sec; want one tick (about 1/sec): %s", el, rate, b.Message)
	}
	if !strings.Contains(b.Message, "delta=1, rate="+b.Metadata["rate"]+"/sec") {
		t.Fatalf("message does not print the per-tick rate: %q", b.Message)
	}
}

// Seed 6.6/10.4 across SIGKILL, in real time. The state file says
// link_error_recovery's window on mlx5_2 started 170 s ago; the daemon
// judges it at its first tick and starts the next window, 6 errors come in
// that window, and the daemon is SIGKILLed. After the restart the window
// is still judged over one minute: 6/min > 5/min breaches. (Restored from
// where the file was last written instead, the 6 errors would be averaged
// over about four minutes: 1.5/min, no breach.)
func TestTiming_SIGKILLInMinuteWindowStillBreaches(t *testing.T) {
	t.Parallel() // mostly waiting for the window or the quiet period to pass
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("counter baselines", portEvent("mlx5_2", event.KindCounterBaseline))
	n.stop()

	const key = "mlx5_2:1:link_error_recovery"
	st, _, err := persist.Load(n.state)
	if err != nil {
		t.Fatal(err)
	}
	mem := memoryOf(st)
	snap, ok := mem.Counters.CounterSnapshots[key]
	if !ok {
		t.Fatalf("no snapshot %s in %s", key, n.state)
	}
	old := time.Now().Add(-170 * time.Second)
	snap.Timestamp = old
	mem.Counters.CounterSnapshots[key] = snap
	section, err := json.Marshal(mem.Counters)
	if err != nil {
		t.Fatal(err)
	}
	st.SetSection(counters.Section, section)
	if err := persist.Save(n.state, st); err != nil {
		t.Fatal(err)
	}

	n.start()
	// The first tick judges the old window and starts a new one, which
	// must reach the disk although the value did not move.
	var rolled time.Time
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if st, _, err := persist.Load(n.state); err == nil && memoryOf(st).Counters.CounterSnapshots[key].Timestamp.After(old.Add(time.Minute)) {
			rolled = memoryOf(st).Counters.CounterSnapshots[key].Timestamp
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rolled.IsZero() {
		t.Fatalf("the rolled-over minute window of %s was not saved\n%s", key, n.stderr.Tail())
	}
	if err := n.h.AddCounter("mlx5_2", 1, "counters/link_error_recovery", 6); err != nil {
		t.Fatal(err)
	}
	n.kill()
	n.start()

	deadline = time.Now().Add(90 * time.Second)
	var b event.Event
	for found := false; !found; {
		if time.Now().After(deadline) {
			t.Fatalf("no link_error_recovery breach after the restart; events: %s\nstderr:\n%s", summary(n.read()), n.stderr.Tail())
		}
		for _, e := range n.read() {
			if counterBreach("mlx5_2", "link_error_recovery")(e) {
				b, found = e, true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if el := metaDuration(t, b, "elapsed"); el < time.Minute || el > time.Minute+5*time.Second {
		t.Fatalf("window judged over %v, want one minute: %s", el, b.Message)
	}
	if rate := metaFloat(t, b, "rate"); rate <= 5 || b.Metadata["threshold"] != "5" {
		t.Fatalf("rate %v/min against threshold %s: %s", rate, b.Metadata["threshold"], b.Message)
	}
}

// Seed state 12.1: "--checks: unknown names are logged and skipped". The
// daemon starts with the known ones, says which names it skipped and which
// exist, and runs only what was asked. A list naming no known check is a
// typo and refused.
func TestTiming_UnknownCheckNamesLoggedAndSkipped(t *testing.T) {
	t.Parallel()
	n, l := newNotifiedNode(t)
	n.start("--checks", "InfiniBandStateCheck,BogusCheck")
	if _, err := l.WaitFor(10*time.Second, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatalf("no READY=1 with an unknown check name: %v\n%s", err, n.stderr.Tail())
	}
	n.waitEvent("IB port baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.stop()
	logs := n.stderr.String()
	var warn string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "BogusCheck") {
			warn = line
		}
	}
	if warn == "" || !strings.Contains(warn, "EthernetDegradationCheck") || !strings.Contains(warn, "running=[InfiniBandStateCheck]") {
		t.Fatalf("no warning naming the skipped name and the known checks:\n%s", logs)
	}
	for _, e := range n.read() {
		if e.CheckName != event.InfiniBandStateCheck {
			t.Fatalf("a check that was not asked for ran: %s %s %s", e.Kind, e.CheckName, e.Message)
		}
	}

	cmd := exec.Command(daemonBin, "--config", n.cfg, "--state-file", n.state, "--checks", "BogusCheck", "--check-config")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "names no known check") {
		t.Fatalf("--checks BogusCheck: %v\n%s", err, out)
	}
}

// Words on a first start (no state file, same boot): the baselines say
// there was no previous state, not that the host rebooted; and a counter
// file the NIC lacks is a warning (seed 10.5), logged once per device and
// not again at a reload.
func TestTiming_FirstStartWordsAndMissingCounterWarning(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	p, err := n.h.PortPath("mlx5_3", 1, "hw_counters/out_of_sequence")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	n.start()
	b := n.waitEvent("counter baseline", portEvent("mlx5_0", event.KindCounterBaseline))
	if strings.Contains(b.Message, "reboot") || !strings.Contains(b.Message, "no previous state") {
		t.Fatalf("first-start baseline says %q", b.Message)
	}
	for _, e := range n.read() {
		if strings.Contains(e.Message, "after reboot") || strings.Contains(e.Message, "host rebooted") {
			t.Fatalf("a first start claims a reboot: %s %s", e.Kind, e.Message)
		}
	}
	gen := func() int { return strings.Count(n.stderr.String(), "configuration applied") }
	n.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for gen() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if gen() == 0 {
		t.Fatalf("reload not applied:\n%s", n.stderr.Tail())
	}
	n.stop()
	// Per device, and per netdev whose driver statistics the ioctl cannot
	// read (the RoCE netdevs of a simulated tree are absent here, as on a
	// host where udev renamed them): once, not again at the reload.
	var warns []string
	perDevice, perNetdev := map[string]int{}, map[string]int{}
	for _, line := range strings.Split(n.stderr.String(), "\n") {
		if strings.Contains(line, "counter files missing") {
			perDevice[logField(line, "device")]++
			if strings.Contains(line, "device=mlx5_3 ") {
				warns = append(warns, line)
			}
		}
		if strings.Contains(line, "driver statistics unavailable") {
			perNetdev[logField(line, "netdev")]++
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "level=WARN") || !strings.Contains(warns[0], "out_of_sequence") {
		t.Fatalf("want one WARN for mlx5_3's missing out_of_sequence, got %d:\n%s", len(warns), strings.Join(warns, "\n"))
	}
	for k, c := range perDevice {
		if c != 1 {
			t.Errorf("device %s: %d missing-counter warnings, want 1", k, c)
		}
	}
	if len(perNetdev) == 0 {
		t.Error("no RoCE netdev reported without driver statistics")
	}
	for k, c := range perNetdev {
		if c != 1 {
			t.Errorf("netdev %s: %d driver-statistics warnings, want 1", k, c)
		}
	}
}

// logField returns key's value in a slog text line (unquoted values only).
func logField(line, key string) string {
	_, v, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}
