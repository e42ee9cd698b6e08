package main

// Black-box tests: the built nichealthd against simulated hosts, driven
// exactly as DESIGN.md section 8's test contract says.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/syncbuf"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/systemd/notify/notifytest"
	"github.com/nichealth/nichealthd/topology/sim"
)

var daemonBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nichealthd-bin-")
	if err != nil {
		panic(err)
	}
	daemonBin = filepath.Join(dir, "nichealthd")
	out, err := exec.Command("go", "build", "-race", "-o", daemonBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build nichealthd: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	stopFabricLab()
	os.RemoveAll(dir)
	os.Exit(code)
}

type node struct {
	t      *testing.T
	h      *sim.Host
	dir    string
	cfg    string
	state  string
	events string
	cmd    *exec.Cmd
	stderr syncBuffer
	env    []string
	// bin and seamArgs are set by simulate: the test build and its
	// --simulate-root. Empty, the node runs the production binary.
	bin      string
	seamArgs []string
	// netns, when set, runs the daemon inside that network namespace
	// (ip netns exec, which also mounts the namespace's sysfs on /sys),
	// and http reaches its loopback endpoints from inside it.
	netns string
	http  *http.Client
	// workDir is the daemon's working directory ("": the test's); a
	// fabric lab's helper writes its sysfs view there.
	workDir string
}

// syncBuffer is the daemon's stderr, written by exec's copier goroutine and
// read by the test.
type syncBuffer struct{ syncbuf.Buffer }

// tailLines is how much of a daemon's log a failed test prints: enough to
// see what the daemon was doing, short enough that the failure itself
// stays on the screen. The whole log goes to a file the message names.
const tailLines = 50

// Tail is the daemon's log as a failure message shows it: its last
// tailLines lines, after a line naming the file that holds all of it.
func (s *syncBuffer) Tail() string {
	all := s.String()
	lines := strings.Split(strings.TrimRight(all, "\n"), "\n")
	if len(lines) <= tailLines {
		return all
	}
	where := "(not kept: cannot write a log file)"
	dir := filepath.Join(os.TempDir(), "nichealthd-test-logs")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		if f, err := os.CreateTemp(dir, "daemon-*.log"); err == nil {
			f.WriteString(all)
			f.Close()
			where = f.Name()
		}
	}
	return fmt.Sprintf("... %d earlier lines of the daemon's log, the whole of it in %s\n%s\n",
		len(lines)-tailLines, where, strings.Join(lines[len(lines)-tailLines:], "\n"))
}

func newNode(t *testing.T, shape, extra string) *node {
	t.Helper()
	dir := t.TempDir()
	h, err := sim.Build(filepath.Join(dir, "host"), shape)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, h: h, dir: dir, cfg: filepath.Join(dir, "config.toml"),
		state: filepath.Join(dir, "state", "state.json"), events: filepath.Join(dir, "events.jsonl")}
	os.MkdirAll(filepath.Dir(n.state), 0o755)
	n.writeConfig(extra)
	return n
}

// newNotifiedNode is a dgx-h100 node whose daemon reports to a notify
// socket the test listens on, with env added to its environment (e.g.
// WATCHDOG_USEC).
func newNotifiedNode(t *testing.T, env ...string) (*node, *notifytest.Listener) {
	t.Helper()
	l, err := notifytest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	n := newNode(t, "dgx-h100", "")
	n.env = append([]string{l.Env()}, env...)
	return n, l
}

// makeFIFO turns a port file into a FIFO nobody writes, so reads of it hang
// as a sysfs read does when the firmware stops answering, and returns its
// path (releaseFIFO ends the hang).
func (n *node) makeFIFO(dev string, port int, rel string) string {
	n.t.Helper()
	p, err := n.h.PortPath(dev, port, rel)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.h.MakeFIFO(dev, port, rel); err != nil {
		n.t.Fatal(err)
	}
	return p
}

func (n *node) writeConfig(extra string) {
	c := fmt.Sprintf(`sysfsRoot = %q
procfsRoot = %q
devRoot = %q
metadataPath = %q
readTimeout = "2s"
[sinks.jsonl]
path = %q
[sinks.journal]
enabled = false
[dbus]
enabled = false
%s`, n.h.SysRoot(), n.h.ProcRoot(), n.h.DevRoot(), n.h.MetadataPath(), n.events, extra)
	if err := os.WriteFile(n.cfg, []byte(c), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) start(args ...string) {
	n.t.Helper()
	n.stderr.Reset()
	a := append([]string{"--config", n.cfg, "--state-file", n.state, "--node-name", "bb-node", "--state-polling-interval", "100ms"}, args...)
	bin := daemonBin
	if n.bin != "" {
		bin, a = n.bin, append(a, n.seamArgs...)
	}
	n.cmd = exec.Command(bin, a...)
	if n.netns != "" {
		// ip netns exec execs the daemon: the pid is the daemon's.
		n.cmd = exec.Command("ip", append([]string{"netns", "exec", n.netns, bin}, a...)...)
	}
	n.cmd.Stderr = &n.stderr
	n.cmd.Dir = n.workDir
	n.cmd.Env = append(os.Environ(), n.env...)
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() {
		if n.cmd != nil && n.cmd.ProcessState == nil {
			n.cmd.Process.Kill()
			n.cmd.Wait()
		}
	})
}

func (n *node) stop() {
	n.t.Helper()
	n.cmd.Process.Signal(syscall.SIGTERM)
	if err := n.cmd.Wait(); err != nil {
		n.t.Fatalf("SIGTERM: exit %v\n%s", err, n.stderr.Tail())
	}
}

func (n *node) kill() {
	n.cmd.Process.Kill()
	n.cmd.Wait()
}

func (n *node) read() []event.Event {
	n.t.Helper()
	b, err := os.ReadFile(n.events)
	if err != nil {
		return nil
	}
	// Only whole lines, as a tailer reads: the last one may still be
	// being written, or be the fragment a SIGKILL left (cut when the sink
	// opens next).
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []event.Event
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e event.Event
		if err := json.Unmarshal(line, &e); err != nil {
			n.t.Fatalf("bad JSON line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// waitEvent waits until an event matching f has been written.
func (n *node) waitEvent(what string, f func(e event.Event) bool) event.Event {
	n.t.Helper()
	return n.waitEventAfter(0, what, f)
}

// waitEventAfter ignores the first skip events of the file.
func (n *node) waitEventAfter(skip int, what string, f func(e event.Event) bool) event.Event {
	n.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for time.Now().Before(deadline) {
		evs := n.read()
		if skip > len(evs) {
			skip = len(evs)
		}
		for _, e := range evs[skip:] {
			if f(e) {
				return e
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.t.Fatalf("no event %s; events: %s\nstderr:\n%s", what, summary(n.read()), n.stderr.Tail())
	return event.Event{}
}

func summary(evs []event.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&sb, "\n  %s %s fatal=%v healthy=%v %s", e.Kind, e.CheckName, e.IsFatal, e.IsHealthy, e.Message)
	}
	return sb.String()
}

func count(evs []event.Event, f func(e event.Event) bool) int {
	c := 0
	for _, e := range evs {
		if f(e) {
			c++
		}
	}
	return c
}

func portEvent(dev string, kind event.Kind) func(e event.Event) bool {
	return func(e event.Event) bool { return e.Device() == dev && e.Kind == kind }
}

func TestBlackBox_FaultToEventAndContractFields(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	e := n.waitEvent("fatal mlx5_3", portEvent("mlx5_3", event.KindPortFatal))
	if e.Message != "Port mlx5_3 port 1: state DOWN, phys_state Disabled" || !e.IsFatal || e.IsHealthy ||
		e.RecommendedAction != event.ActionReplaceVM || e.CheckName != event.InfiniBandStateCheck ||
		e.NodeName != "bb-node" || e.Agent != "nic-health-monitor" || e.ComponentClass != "NIC" ||
		e.ProcessingStrategy != event.StrategyExecuteRemediation || e.ID == "" || e.GeneratedTimestamp.IsZero() {
		t.Fatalf("event fields: %+v", e)
	}
	if e.Port() != "1" {
		t.Fatalf("entities %+v", e.EntitiesImpacted)
	}
	// The raw line uses the protojson names of the contract.
	raw, _ := os.ReadFile(n.events)
	for _, k := range []string{`"checkName"`, `"isFatal"`, `"recommendedAction":"REPLACE_VM"`, `"entityType":"NIC"`, `"generatedTimestamp"`, `"processingStrategy":"EXECUTE_REMEDIATION"`} {
		if !bytes.Contains(raw, []byte(k)) {
			t.Fatalf("events file lacks %s", k)
		}
	}
	// RoCE port disabled.
	n.h.SetPortState("mlx5_8", 1, "DOWN", "Disabled")
	n.waitEvent("RoCE fatal", func(e event.Event) bool {
		return e.Device() == "mlx5_8" && e.Kind == event.KindPortFatal && e.CheckName == event.EthernetStateCheck
	})
	// Management NIC: never alarmed on.
	n.h.SetPortState("mlx5_12", 1, "DOWN", "Disabled")
	// NIC falls off the bus.
	n.h.RemoveDevice("mlx5_6")
	n.waitEvent("disappeared", portEvent("mlx5_6", event.KindDeviceDisappeared))
	n.h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp")
	n.waitEvent("recovered", portEvent("mlx5_3", event.KindPortRecovered))
	n.stop()
	evs := n.read()
	if c := count(evs, func(e event.Event) bool { return e.Device() == "mlx5_12" }); c != 0 {
		t.Fatalf("management NIC reported: %s", summary(evs))
	}
	if c := count(evs, portEvent("mlx5_3", event.KindPortFatal)); c != 1 {
		t.Fatalf("fatal reported %d times", c)
	}
	// VFs are never reported.
	if c := count(evs, func(e event.Event) bool { return e.Device() == "mlx5_13" }); c != 0 {
		t.Fatal("VF reported")
	}
}

func TestBlackBox_RestartSameBootRecoversPortFixedWhileDown(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.h.SetPortState("mlx5_2", 1, "DOWN", "Disabled")
	n.waitEvent("fatal", portEvent("mlx5_2", event.KindPortFatal))
	n.stop()
	n.h.SetPortState("mlx5_2", 1, "ACTIVE", "LinkUp")
	n.start()
	n.waitEvent("recovery after restart", portEvent("mlx5_2", event.KindPortRecovered))
	n.stop()
	if c := count(n.read(), portEvent("mlx5_0", event.KindPortBaseline)); c != 1 {
		t.Fatalf("baselines repeated on same-boot restart: %d", c)
	}
}

func TestBlackBox_RestartNewBootEmitsBaselines(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.h.AddCounter("mlx5_0", 1, "counters/link_downed", 1)
	n.waitEvent("breach", portEvent("mlx5_0", event.KindCounterBreach))
	n.stop()
	if _, err := n.h.NewBootID(); err != nil {
		t.Fatal(err)
	}
	n.h.ResetCounters("mlx5_0", 1)
	before := len(n.read())
	n.start()
	n.waitEventAfter(before, "check cleared", func(e event.Event) bool {
		return e.Kind == event.KindCheckCleared && e.CheckName == event.InfiniBandDegradationCheck
	})
	n.waitEventAfter(before, "counter baseline", portEvent("mlx5_0", event.KindCounterBaseline))
	n.stop()
	after := n.read()[before:]
	// DESIGN.md difference 5: the check-scoped clear comes first, for
	// every check: the state check's too, under which the fatal counters'
	// baselines now go (difference 2).
	if after[0].Kind != event.KindCheckCleared || len(after[0].EntitiesImpacted) != 0 {
		t.Fatalf("first event after reboot: %s", summary(after))
	}
	first := map[string]event.Kind{}
	baselines := map[string]int{}
	for _, e := range after {
		if _, seen := first[e.CheckName]; !seen {
			first[e.CheckName] = e.Kind
		}
		if e.Kind == event.KindCounterBaseline && e.Device() == "mlx5_0" {
			baselines[e.CheckName]++
		}
	}
	for c, k := range first {
		if k != event.KindCheckCleared {
			t.Errorf("%s's first event after the reboot is %s, not its check-scoped clear: %s", c, k, summary(after))
		}
	}
	if baselines[event.InfiniBandStateCheck] != 1 || baselines[event.InfiniBandDegradationCheck] != 1 {
		t.Errorf("mlx5_0's counter baselines by check: %v, want one under each", baselines)
	}
}

func TestBlackBox_SIGKILLDuringSavesKeepsStateLoadable(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	for i := 0; i < 6; i++ {
		n.start()
		// The pauses only spread the kills over start-up, polls and saves;
		// what is checked (a loadable state file) holds whatever they are.
		time.Sleep(time.Duration(150+i*70) * time.Millisecond)
		st := "DOWN"
		if i%2 == 1 {
			st = "ACTIVE"
		}
		phys := map[string]string{"DOWN": "Disabled", "ACTIVE": "LinkUp"}[st]
		n.h.SetPortState("mlx5_1", 1, st, phys)
		n.h.AddCounter("mlx5_4", 1, "counters/symbol_error", 3)
		time.Sleep(time.Duration(40+i*30) * time.Millisecond)
		n.kill()
		if _, status, err := persist.Load(n.state); err != nil || status == persist.LoadCorrupt {
			t.Fatalf("round %d: state status %v err %v", i, status, err)
		}
	}
	// After all the kills the daemon still tracks the port: a new fault and
	// its recovery are both reported.
	before := len(n.read())
	n.h.SetPortState("mlx5_1", 1, "ACTIVE", "LinkUp")
	n.start()
	// A whole poll has seen the port ACTIVE before it goes down.
	n.waitPolls(2)
	n.h.SetPortState("mlx5_1", 1, "DOWN", "Disabled")
	n.waitEventAfter(before, "fatal mlx5_1 after the kills", portEvent("mlx5_1", event.KindPortFatal))
	n.h.SetPortState("mlx5_1", 1, "ACTIVE", "LinkUp")
	n.waitEventAfter(before, "recovery mlx5_1 after the kills", portEvent("mlx5_1", event.KindPortRecovered))
	n.stop()
}

func TestBlackBox_StartupErrorIsOneLine(t *testing.T) {
	n := newNode(t, "minimal", "topologySource = \"bogus\"\n")
	cmd := exec.Command(daemonBin, "--config", n.cfg, "--state-file", n.state, "--node-name", "x")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatal("started with an invalid config")
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "topologySource") || !strings.Contains(lines[0], n.cfg) {
		t.Fatalf("stderr: %q", stderr.String())
	}
}

// The whole notify sequence, with a sysfs read that hangs in the kernel (a
// FIFO): it is reported once, the rest stays monitored, the watchdog keeps
// being fed.
func TestBlackBox_NotifySequenceWithHungRead(t *testing.T) {
	t.Parallel()
	n, l := newNotifiedNode(t, "WATCHDOG_USEC=400000", "WATCHDOG_PID=")
	fifo := n.makeFIFO("mlx5_1", 1, "counters/symbol_error")
	n.start()
	ready, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool { return m.Has("READY", "1") })
	if err != nil {
		t.Fatalf("READY: %v\n%s", err, n.stderr.Tail())
	}
	if st, _ := ready.Get("STATUS"); !strings.Contains(st, "ports on") {
		t.Fatalf("READY without a status line: %q", ready.Raw)
	}
	stuck := n.waitEvent("read-stuck", func(e event.Event) bool { return e.Kind == event.KindReadStuck })
	if stuck.Device() != "mlx5_1" || !strings.Contains(stuck.Message, "symbol_error") {
		t.Fatalf("stuck event %+v", stuck)
	}
	// Monitoring of everything else goes on.
	n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled")
	n.waitEvent("fatal while a read hangs", portEvent("mlx5_3", event.KindPortFatal))
	for i := 0; i < 3; i++ {
		if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool { return m.Has("WATCHDOG", "1") }); err != nil {
			t.Fatalf("watchdog not fed while a read hangs: %v", err)
		}
	}
	// Release the hung reader.
	if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
		w.Write([]byte("0\n"))
		w.Close()
	}
	n.cmd.Process.Signal(syscall.SIGHUP)
	if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool {
		_, ok := m.Get("MONOTONIC_USEC")
		return m.Has("RELOADING", "1") && ok
	}); err != nil {
		t.Fatal("no RELOADING=1 with MONOTONIC_USEC")
	}
	if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool { return m.Has("READY", "1") }); err != nil {
		t.Fatal("no READY after reload")
	}
	n.stop()
	if _, err := l.WaitFor(waitDeadline, func(m notifytest.Message) bool { return m.Has("STOPPING", "1") }); err != nil {
		t.Fatal("no STOPPING=1")
	}
	if c := count(n.read(), func(e event.Event) bool { return e.Kind == event.KindReadStuck }); c != 1 {
		t.Fatalf("stuck reported %d times", c)
	}
}

func TestBlackBox_LiveReloadEditingStyles(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	logHas := func(s string) bool {
		deadline := time.Now().Add(waitDeadline)
		for time.Now().Before(deadline) {
			if strings.Count(n.stderr.String(), s) > 0 {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	}
	// Rename-over (what most editors and config managers do).
	tmp := n.cfg + ".new"
	orig, _ := os.ReadFile(n.cfg)
	os.WriteFile(tmp, append(orig, []byte("\n[linkSanity]\nissm = true\n")...), 0o644)
	os.Rename(tmp, n.cfg)
	if !logHas("generation=2") {
		t.Fatalf("rename-over not applied:\n%s", n.stderr.Tail())
	}
	// In-place rewrite (sed -i rewrites via rename too; echo > truncates).
	os.WriteFile(n.cfg, append(orig, []byte("\n[linkSanity]\nissm = false\n")...), 0o644)
	if !logHas("generation=3") {
		t.Fatalf("in-place write not applied:\n%s", n.stderr.Tail())
	}
	// An invalid file is refused; the running config stays.
	os.WriteFile(n.cfg, append(orig, []byte("\npollingInterval = \"fast\"\n")...), 0o644)
	if !logHas("configuration refused") {
		t.Fatalf("invalid config not refused:\n%s", n.stderr.Tail())
	}
	n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled")
	n.waitEvent("still monitoring after a refused reload", portEvent("mlx5_0", event.KindPortFatal))
	n.stop()
}

// A state file from a newer nichealthd is refused, never overwritten.
func TestBlackBox_NewerStateSchemaRefused(t *testing.T) {
	n := newNode(t, "minimal", "")
	newer := []byte(`{"version": 99, "boot_id": "x"}`)
	if err := os.WriteFile(n.state, newer, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemonBin, "--config", n.cfg, "--state-file", n.state, "--node-name", "x")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("started over a newer state file")
	}
	if !strings.Contains(stderr.String(), "newer") || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
		t.Fatalf("stderr: %q", stderr.String())
	}
	if b, _ := os.ReadFile(n.state); !bytes.Equal(b, newer) {
		t.Fatal("newer state file was modified")
	}
}

// A corrupt state file means a fresh start with one warning, and the
// daemon runs.
func TestBlackBox_CorruptStateFileFreshStart(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	os.WriteFile(n.state, []byte("{not json"), 0o600)
	n.start()
	n.waitEvent("baseline after corrupt state", portEvent("mlx5_0", event.KindPortBaseline))
	n.stop()
	if !strings.Contains(n.stderr.String(), "state file unusable") {
		t.Fatalf("no warning:\n%s", n.stderr.Tail())
	}
}

// Seed 10.2/10.4/11.1 seen from outside: breach, latching, admin reset,
// saturation, unreadable values, and the netdev counter.
func TestBlackBox_CounterEvents(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindCounterBaseline))

	n.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1)
	e := n.waitEvent("link_downed breach", portEvent("mlx5_1", event.KindCounterBreach))
	if !e.IsFatal || e.CheckName != event.InfiniBandStateCheck || len(e.ErrorCode) != 1 || e.ErrorCode[0] != "link_downed" ||
		e.RecommendedAction != event.ActionReplaceVM || !strings.HasPrefix(e.Message, "Port mlx5_1 port 1: link_downed - ") {
		t.Fatalf("link_downed event %+v", e)
	}
	// Latched: more increments emit nothing; an admin reset recovers.
	n.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1)
	latched := n.counterFile("mlx5_1", 1, "counters/link_downed")
	// The daemon has read the second increment (and, below, emitted
	// nothing for it) before the reset.
	n.waitCounterValue("mlx5_1", 1, "link_downed", float64(latched))
	n.h.ResetCounters("mlx5_1", 1)
	r := n.waitEvent("recovery on reset", portEvent("mlx5_1", event.KindCounterRecovered))
	if !r.IsHealthy || r.CheckName != event.InfiniBandStateCheck || !strings.Contains(r.Message, "link_downed") ||
		r.Metadata["previousValue"] != strconv.FormatUint(latched, 10) {
		t.Fatalf("recovery %+v", r)
	}

	n.h.AddCounter("mlx5_2", 1, "counters/symbol_error", 5000)
	s := n.waitEvent("symbol_error", func(e event.Event) bool {
		return e.Device() == "mlx5_2" && e.Kind == event.KindCounterBreach && e.ErrorCode[0] == "symbol_error"
	})
	if s.IsFatal || s.RecommendedAction != event.ActionNone || s.Metadata["threshold"] == "" || !strings.Contains(s.Message, "/sec)") {
		t.Fatalf("symbol_error event %+v", s)
	}

	n.h.SetCounter("mlx5_4", 1, "counters/port_xmit_discards", 65535)
	n.waitEvent("saturation", portEvent("mlx5_4", event.KindCounterSaturated))

	n.h.WriteRaw("mlx5_5", 1, "counters/link_downed", "N/A (no PMA)\n")
	n.h.SetCarrierChanges("enp65s0f0np0", 100)
	c := n.waitEvent("carrier_changes", portEvent("mlx5_8", event.KindCounterBreach))
	if c.CheckName != event.EthernetDegradationCheck || c.ErrorCode[0] != "carrier_changes" {
		t.Fatalf("carrier_changes %+v", c)
	}
	n.h.SetCounter("mlx5_5", 1, "counters/link_downed", 0)
	// Absence of events for mlx5_5 is checked after whole polls have read
	// the value, not after a pause.
	n.waitPolls(2)
	n.stop()
	evs := n.read()
	if k := count(evs, portEvent("mlx5_1", event.KindCounterBreach)); k != 1 {
		t.Fatalf("latched breach re-reported: %d", k)
	}
	if k := count(evs, func(e event.Event) bool {
		return e.Device() == "mlx5_5" && e.Kind != event.KindCounterBaseline && e.Kind != event.KindPortBaseline
	}); k != 0 {
		t.Fatalf("an unreadable value produced events: %s", summary(evs))
	}
	if k := count(evs, portEvent("mlx5_4", event.KindCounterSaturated)); k != 1 {
		t.Fatalf("saturation reported %d times", k)
	}
}

// The classic IB health check's extras (seed slides): PCIe link below its
// capability, and a port slower than its role peers, as non-fatal events
// that resolve with a healthy event.
func TestBlackBox_LinkSanityEvents(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	dev, _ := n.h.Device("mlx5_2")
	pci := filepath.Join(n.h.SysRoot(), dev.PCIPath)
	// Replace, never write in place: the simulator shares inodes between
	// files of equal content.
	tmp := filepath.Join(pci, "current_link_width.tmp")
	if err := os.WriteFile(tmp, []byte("8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(pci, "current_link_width")); err != nil {
		t.Fatal(err)
	}
	n.start()
	p := n.waitEvent("PCIe width finding", func(e event.Event) bool {
		return e.Kind == event.KindLinkSanity && e.Device() == "mlx5_2" && len(e.ErrorCode) == 1 && e.ErrorCode[0] == "pcie-width"
	})
	if p.IsFatal || p.CheckName != event.InfiniBandDegradationCheck {
		t.Fatalf("%+v", p)
	}
	n.h.SetRate("mlx5_3", 1, "200 Gb/sec (4X HDR)")
	n.waitEvent("rate below peers", func(e event.Event) bool {
		return e.Kind == event.KindLinkSanity && e.Device() == "mlx5_3" && e.ErrorCode[0] == "rate-below-peers"
	})
	n.h.SetRate("mlx5_3", 1, "400 Gb/sec (4X NDR)")
	n.waitEvent("rate resolved", func(e event.Event) bool {
		return e.Kind == event.KindLinkSanityOK && e.Device() == "mlx5_3" && e.IsHealthy
	})
	n.stop()
	// No noise on a healthy simulated node: only the planted findings.
	for _, e := range n.read() {
		if e.Kind == event.KindLinkSanity && e.Device() != "mlx5_2" && e.Device() != "mlx5_3" {
			t.Fatalf("unexpected finding: %s", e.Message)
		}
	}
}
