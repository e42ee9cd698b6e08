package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/systemd/notify/notifytest"
	"github.com/nichealth/nichealthd/topology/sim"
)

var (
	ctlOnce sync.Once
	ctlPath string
	ctlErr  error
)

// ctlBinary builds nichealthctl once, next to the daemon under test.
func ctlBinary(t *testing.T) string {
	t.Helper()
	ctlOnce.Do(func() {
		ctlPath = filepath.Join(filepath.Dir(daemonBin), "nichealthctl")
		out, err := exec.Command("go", "build", "-o", ctlPath, "../nichealthctl").CombinedOutput()
		if err != nil {
			ctlErr = fmt.Errorf("build nichealthctl: %v\n%s", err, out)
		}
	})
	if ctlErr != nil {
		t.Fatal(ctlErr)
	}
	return ctlPath
}

// viewNode is a daemon with every window open: JSON lines, D-Bus on a
// private bus, /metrics on loopback and a notify socket.
type viewNode struct {
	*busNode
	metrics string
	notify  *notifytest.Listener
}

func newViewNode(t *testing.T) *viewNode {
	t.Helper()
	return newShapeViewNode(t, "dgx-h100")
}

// newShapeViewNode is a node of the given shape with D-Bus, /metrics and
// a notify socket: every view the verdict tests compare. tables are
// appended to its configuration (each starting with a table header).
func newShapeViewNode(t *testing.T, shape string, tables ...string) *viewNode {
	t.Helper()
	needBusctl(t)
	b := newBusNode(t, shape, integConfig{}, dbustest.Options{})
	addr := freePort(t)
	// A short card hold: the tests watch a stuck port escalate.
	cfg := strings.Replace(b.configText(integConfig{dbus: true, tables: strings.Join(tables, "\n")}), "[sinks.jsonl]", fmt.Sprintf("metricsAddress = %q\ncardAnomalyHold = \"1s\"\n[sinks.jsonl]", addr), 1)
	if err := os.WriteFile(b.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := notifytest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b.env = append(b.env, l.Env())
	return &viewNode{busNode: b, metrics: "http://" + addr + "/metrics", notify: l}
}

// ctl runs nichealthctl against the node's bus and returns stdout and the
// exit code.
func (v *viewNode) ctl(args ...string) (string, int) {
	v.t.Helper()
	cmd := exec.Command(ctlBinary(v.t), args...)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+v.bus.Address, "NO_COLOR=1")
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		v.t.Fatalf("nichealthctl %v: %v", args, err)
	}
	return string(out), code
}

func (v *viewNode) scrape() string {
	v.t.Helper()
	resp, err := http.Get(v.metrics)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// lastStatus is the newest STATUS= the daemon sent.
func (v *viewNode) lastStatus() string {
	st := ""
	for _, m := range v.notify.Received() {
		if s, ok := m.Get("STATUS"); ok {
			st = s
		}
	}
	return st
}

// verdictWant is what every view must say of one port and the node.
type verdictWant struct {
	dev     string
	port    int
	verdict string // "healthy", "degraded" or "fatal"
}

// agree waits until every window shows the wanted verdict, then checks
// them all once more together: the JSON-lines stream was checked by the
// caller; here D-Bus (Port Healthy/Fatal/Verdict, Manager
// Healthy/FatalPorts/DegradedPorts), nichealthctl status, ports and check
// (text and exit code), /metrics and STATUS=.
func (v *viewNode) agree(w verdictWant) {
	v.t.Helper()
	key := fmt.Sprintf("%s/%d", w.dev, w.port)
	var why string
	deadline := time.Now().Add(20 * time.Second)
	for {
		why = v.disagreement(w, key)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("views disagree on %s (%s): %s\nstderr:\n%s", key, w.verdict, why, v.stderr.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (v *viewNode) disagreement(w verdictWant, key string) string {
	pv, err := v.cl.Port(ctxT(v.t), w.dev, w.port)
	if err != nil {
		return "D-Bus port: " + err.Error()
	}
	if pv.Verdict != w.verdict || pv.Healthy != (w.verdict == "healthy") || pv.Fatal != (w.verdict == "fatal") {
		return fmt.Sprintf("D-Bus port verdict %q healthy %v fatal %v", pv.Verdict, pv.Healthy, pv.Fatal)
	}
	m, err := v.cl.Manager(ctxT(v.t))
	if err != nil {
		return "D-Bus manager: " + err.Error()
	}
	if m.Verdict != w.verdict || m.Healthy != (w.verdict == "healthy") ||
		slices.Contains(m.FatalPorts, key) != (w.verdict == "fatal") || slices.Contains(m.DegradedPorts, key) != (w.verdict == "degraded") {
		return fmt.Sprintf("D-Bus manager verdict %q healthy %v fatal %v degraded %v", m.Verdict, m.Healthy, m.FatalPorts, m.DegradedPorts)
	}
	wantCode := map[string]int{"healthy": 0, "degraded": 1, "fatal": 2}[w.verdict]
	status, code := v.ctl("status")
	head := map[string]string{"healthy": ": healthy", "degraded": ": degraded", "fatal": ": fatal"}[w.verdict]
	if !strings.Contains(status, head) || (code == 0) != (w.verdict == "healthy") {
		return fmt.Sprintf("nichealthctl status (exit %d):\n%s", code, status)
	}
	if w.verdict != "healthy" && !strings.Contains(status, key) {
		return "nichealthctl status does not name " + key + ":\n" + status
	}
	ports, _ := v.ctl("ports")
	row := ""
	for _, l := range strings.Split(ports, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == w.dev && f[1] == fmt.Sprint(w.port) {
			row = l
		}
	}
	wantHealth := map[string]string{"healthy": "healthy", "degraded": "degraded", "fatal": "fatal"}[w.verdict]
	if !strings.Contains(row, wantHealth) {
		return fmt.Sprintf("nichealthctl ports row %q lacks %q", row, wantHealth)
	}
	check, ccode := v.ctl("check")
	plugin := map[string]string{"healthy": ":OK", "degraded": ":WARNING", "fatal": ":CRITICAL"}[w.verdict]
	if ccode != wantCode || !strings.Contains(check, w.dev+"-") || !strings.Contains(check[strings.Index(check, w.dev+"-"):], plugin) {
		return fmt.Sprintf("nichealthctl check (exit %d, want %d): %s", ccode, wantCode, check)
	}
	page := v.scrape()
	healthy := map[bool]string{true: "1", false: "0"}
	for _, line := range []string{
		"nichealth_healthy " + healthy[w.verdict == "healthy"],
		fmt.Sprintf(`nichealth_port_verdict{device="%s",port="%d"`, w.dev, w.port),
	} {
		if !strings.Contains(page, line) {
			return "/metrics lacks " + line
		}
	}
	pfx := fmt.Sprintf(`nichealth_port_fatal{device="%s",port="%d",`, w.dev, w.port)
	if i := strings.Index(page, pfx); i < 0 || !strings.HasPrefix(strings.Fields(page[i:])[1], healthy[w.verdict == "fatal"]) {
		return "/metrics " + pfx + " is not " + healthy[w.verdict == "fatal"]
	}
	st := v.lastStatus()
	switch w.verdict {
	case "healthy":
		if !strings.HasSuffix(st, "all healthy") {
			return "STATUS= " + st
		}
	case "fatal":
		if !strings.Contains(st, "1 fatal") && !strings.Contains(st, " fatal") {
			return "STATUS= " + st
		}
	case "degraded":
		if !strings.Contains(st, "degraded") {
			return "STATUS= " + st
		}
	}
	return ""
}

// TestIntegration_OneVerdict_EveryViewAgrees injects each condition kind
// on a simulated node and asserts the same verdict in every window, then
// the same clear (DESIGN.md section 9: every raise has its clear, and the
// event stream, D-Bus, nichealthctl, /metrics and STATUS= never disagree).
func TestIntegration_OneVerdict_EveryViewAgrees(t *testing.T) {
	t.Parallel()
	ack := func(v *viewNode, dev, counter string) {
		if err := v.cl.AcknowledgeReset(ctxT(v.t), dev, 1, counter); err != nil {
			v.t.Fatalf("ack %s %s: %v", dev, counter, err)
		}
	}
	fifo := func(v *viewNode, dev, rel string) {
		if err := v.h.MakeFIFO(dev, 1, rel); err != nil {
			v.t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		dev     string
		verdict string
		raise   func(v *viewNode)
		raised  func(e event.Event) bool
		clear   func(v *viewNode)
		cleared func(e event.Event) bool
	}{
		{"port fatal", "mlx5_3", "fatal",
			func(v *viewNode) { v.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled") },
			portEvent("mlx5_3", event.KindPortFatal),
			func(v *viewNode) { v.h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp") },
			portEvent("mlx5_3", event.KindPortRecovered)},
		{"port non-fatal (RoCE netdev down)", "mlx5_8", "degraded",
			func(v *viewNode) { v.h.SetOperstate("enp65s0f0np0", "down") },
			portEvent("mlx5_8", event.KindPortNonFatal),
			func(v *viewNode) { v.h.SetOperstate("enp65s0f0np0", "up") },
			portEvent("mlx5_8", event.KindPortRecovered)},
		{"port stuck in INIT escalated by card homogeneity at run time", "mlx5_2", "fatal",
			func(v *viewNode) { v.h.SetPortState("mlx5_2", 1, "INIT", "LinkUp") },
			portEvent("mlx5_2", event.KindCardAnomaly),
			func(v *viewNode) { v.h.SetPortState("mlx5_2", 1, "ACTIVE", "LinkUp") },
			portEvent("mlx5_2", event.KindCardRecovered)},
		{"latched fatal counter", "mlx5_1", "fatal",
			func(v *viewNode) { v.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1) },
			portEvent("mlx5_1", event.KindCounterBreach),
			func(v *viewNode) { ack(v, "mlx5_1", "link_downed") },
			portEvent("mlx5_1", event.KindCounterRecovered)},
		{"latched non-fatal counter", "mlx5_4", "degraded",
			func(v *viewNode) { v.h.AddCounter("mlx5_4", 1, "counters/symbol_error", 5000) },
			portEvent("mlx5_4", event.KindCounterBreach),
			func(v *viewNode) { ack(v, "mlx5_4", "symbol_error") },
			portEvent("mlx5_4", event.KindCounterRecovered)},
		{"disappeared NIC", "mlx5_6", "fatal",
			func(v *viewNode) { v.h.RemoveDevice("mlx5_6") },
			portEvent("mlx5_6", event.KindDeviceDisappeared),
			func(v *viewNode) { v.h.RestoreDevice("mlx5_6") },
			portEvent("mlx5_6", event.KindDeviceReappeared)},
		{"stuck read", "mlx5_5", "degraded",
			func(v *viewNode) { fifo(v, "mlx5_5", "counters/port_rcv_errors") },
			portEvent("mlx5_5", event.KindReadStuck),
			// The hung read returns (as a firmware that answers again).
			func(v *viewNode) { releaseFIFO(v.t, v.node, "mlx5_5", 1, "counters/port_rcv_errors") },
			portEvent("mlx5_5", event.KindReadRecovered)},
		{"kernel log: firmware command timeout", "mlx5_0", "fatal",
			func(v *viewNode) {
				v.kmsg(v.nicRecord("mlx5_0", "mlx5_core %s: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource"))
			},
			portEvent("mlx5_0", event.KindKernelLog),
			func(v *viewNode) { ack(v, "mlx5_0", "kernel_log") },
			portEvent("mlx5_0", event.KindKernelLogCleared)},
		{"link sanity finding", "mlx5_7", "degraded",
			func(v *viewNode) { v.h.SetRate("mlx5_7", 1, "200 Gb/sec (4X HDR)") },
			portEvent("mlx5_7", event.KindLinkSanity),
			func(v *viewNode) { v.h.SetRate("mlx5_7", 1, "400 Gb/sec (4X NDR)") },
			portEvent("mlx5_7", event.KindLinkSanityOK)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newViewNode(t)
			v.start()
			v.waitReady()
			v.agree(verdictWant{tc.dev, 1, "healthy"})
			skip := v.mark()
			tc.raise(v)
			e := v.waitEventAfter(skip, tc.name, tc.raised)
			if e.IsHealthy || e.IsFatal != (tc.verdict == "fatal" && e.Kind != event.KindPortNonFatal) {
				t.Fatalf("raising event %+v", e)
			}
			v.agree(verdictWant{tc.dev, 1, tc.verdict})
			skip = len(v.read())
			tc.clear(v)
			if c := v.waitEventAfter(skip, tc.name+" cleared", tc.cleared); !c.IsHealthy {
				t.Fatalf("clearing event %+v", c)
			}
			v.agree(verdictWant{tc.dev, 1, "healthy"})
			v.cmd.Process.Signal(syscall.SIGTERM)
			v.cmd.Wait()
		})
	}
}

// TestIntegration_OneVerdict_FrozenBusDoesNotStopPolling freezes the
// system bus (SIGSTOP) for 10 s while ports flap: every fault is still
// emitted to the JSON-lines sink on time, and D-Bus catches up afterwards.
func TestIntegration_OneVerdict_FrozenBusDoesNotStopPolling(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	b := newBusNode(t, "dgx-h100", integConfig{}, dbustest.Options{})
	b.start()
	b.waitReady()
	sigs := subscribe(t, b.bus)
	if err := syscall.Kill(b.bus.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := true
	defer func() {
		if frozen {
			syscall.Kill(b.bus.PID(), syscall.SIGCONT)
		}
	}()
	until := time.Now().Add(10 * time.Second)
	flaps := 0
	for time.Now().Before(until) {
		skip := len(b.read())
		state := map[bool][2]string{true: {"DOWN", "Disabled"}, false: {"ACTIVE", "LinkUp"}}[flaps%2 == 0]
		start := time.Now()
		b.h.SetPortState("mlx5_3", 1, state[0], state[1])
		kind := event.KindPortRecovered
		if flaps%2 == 0 {
			kind = event.KindPortFatal
		}
		b.waitEventAfter(skip, fmt.Sprintf("flap %d while the bus is frozen", flaps), portEvent("mlx5_3", kind))
		// A 100 ms poll: well within 5 s even on a loaded machine, and far
		// from the godbus write that would block forever.
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("flap %d took %v to reach the JSON-lines sink with the bus frozen", flaps, d)
		}
		flaps++
	}
	if err := syscall.Kill(b.bus.PID(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen = false
	if flaps < 4 {
		t.Fatalf("only %d flaps in 10 s with the bus frozen", flaps)
	}
	// Once the bus runs again, signals flow and the properties catch up.
	dbustest.WaitSignal(t, sigs, func(s *dbus.Signal) bool { return s.Name == dbusapi.ManagerIface+".HealthEvent" })
	// An even number of flaps leaves the port up (and, past three, the
	// node's flap rule holding it fatal: its verdict is not the point).
	want := map[bool]string{true: "ACTIVE", false: "DOWN"}[flaps%2 == 0]
	b.waitPort("mlx5_3", 1, "caught up", func(p dbusapi.PortView) bool { return p.State == want })
	b.stop()
}

// One byte that is not UTF-8 in a sysfs file must not break a view
// (DESIGN.md section 9): the D-Bus replies, nichealthctl and the fatal
// HealthEvent signal all carry the text with the byte escaped.
func TestIntegration_OneVerdict_InvalidUTF8InSysfsBreaksNoView(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	v := newViewNode(t)
	v.start()
	v.waitReady()
	sigs := subscribe(t, v.bus)
	if err := v.h.WriteRaw("mlx5_3", 1, "rate", "400 Gb/sec (4X NDR\xff)\n"); err != nil {
		t.Fatal(err)
	}
	v.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled")
	dbustest.WaitSignal(t, sigs, func(s *dbus.Signal) bool {
		return s.Name == dbusapi.ManagerIface+".HealthEvent" && len(s.Body) > 2 && s.Body[2] == "mlx5_3"
	})
	// The rate and the state are two files: a poll may read the new rate
	// with the old state, so wait for both in one view.
	v.waitPort("mlx5_3", 1, "the escaped rate on the fatal port", func(p dbusapi.PortView) bool {
		return strings.Contains(p.Rate, `\xff`) && p.Fatal
	})
	if out, code := v.ctl("ports"); code != 2 && code != 1 || !strings.Contains(out, `NDR\xff`) {
		t.Fatalf("nichealthctl ports (exit %d):\n%s", code, out)
	}
	if out, code := v.ctl("status"); code == 0 || !strings.Contains(out, "mlx5_3/1") {
		t.Fatalf("nichealthctl status (exit %d):\n%s", code, out)
	}
	v.mustBusctl("call", dbusapi.BusName, string(dbusapi.RootPath), "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
	v.stop()
}

// Every NIC event names the GPUs behind its NIC (PIX/PXB in the matrix),
// as D-Bus and nichealthctl port do, so a scheduler can drain the GPUs or
// rail rather than the node; storage NICs say they have no GPU affinity.
func TestIntegration_GPUsBehindEveryNICEvent(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	v := newViewNode(t)
	v.start()
	v.waitReady()
	skip := v.mark()
	v.h.SetPortState("mlx5_3", 1, "INIT", "LinkUp")
	e := v.waitEventAfter(skip, "mlx5_3 in INIT", portEvent("mlx5_3", event.KindPortNonFatal))
	var gpu3 sim.GPUInfo
	for _, g := range v.h.GPUs() {
		if g.ID == 3 {
			gpu3 = g
		}
	}
	if want := fmt.Sprintf("GPU3 (%s %s)", gpu3.PCIAddress, gpu3.UUID); gpu3.UUID == "" || e.Metadata["gpus"] != want {
		t.Fatalf("mlx5_3 event gpus %q, want %q: GPU3 with its PCI address and the metadata's UUID", e.Metadata["gpus"], want)
	}
	card := v.waitEventAfter(skip, "card anomaly", portEvent("mlx5_3", event.KindCardAnomaly))
	if card.Metadata["gpus"] != e.Metadata["gpus"] {
		t.Fatalf("card event gpus %q, port event %q", card.Metadata["gpus"], e.Metadata["gpus"])
	}
	skip = len(v.read())
	v.h.SetOperstate("enp65s0f0np0", "down")
	s := v.waitEventAfter(skip, "mlx5_8 degraded", portEvent("mlx5_8", event.KindPortNonFatal))
	if g := s.Metadata["gpus"]; g != "no GPU affinity" {
		t.Fatalf("storage NIC event gpus %q", g)
	}
	if p := v.waitPort("mlx5_3", 1, "GPUs", func(p dbusapi.PortView) bool { return p.GPUs != "" }); p.GPUs != e.Metadata["gpus"] {
		t.Fatalf("D-Bus GPUs %q, event %q", p.GPUs, e.Metadata["gpus"])
	}
	if out, _ := v.ctl("port", "mlx5_3", "1"); !strings.Contains(out, e.Metadata["gpus"]) {
		t.Fatalf("nichealthctl port lacks the GPUs:\n%s", out)
	}
	v.stop()
}

// mark is where the events a test is about start: the number of events in
// the JSON-lines file once it has caught up with the outbox. Counting the
// file as it stands would race the delivery of what came before (a
// daemon is ready before its start-up events are delivered), and those
// would then be taken for the test's.
func (v *viewNode) mark() int {
	v.t.Helper()
	v.waitDrained()
	return len(v.read())
}
