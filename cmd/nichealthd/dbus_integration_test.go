package main

// End-to-end tests of the D-Bus API (DESIGN.md section 5): the built daemon
// on a private system bus that loads the project's own policy file, driven
// with busctl and with the Go client exactly as operators and nichealthctl
// drive it.
//
// This file also holds the helpers the other *_integration_test.go files
// share (configuration, log and D-Bus waits).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"

	"github.com/nichealth/nichealthd/internal/component"
)

// integConfig is the configuration the integration tests give the daemon:
// the simulated host and the JSON-lines sink as in blackbox_test.go, plus
// optionally D-Bus, the platform connector, and extra TOML tables.
type integConfig struct {
	dbus      bool
	connector string // socket path; "" = no connector sink
	batch     string // [sinks.connector] batchInterval
	// tables is appended last; it must start with a table header
	// ("[[counterDetection.counters]]", "[linkSanity]", ...).
	tables string
}

func (n *node) configText(c integConfig) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `sysfsRoot = %q
procfsRoot = %q
devRoot = %q
metadataPath = %q
readTimeout = "2s"
[sinks.jsonl]
path = %q
[sinks.journal]
enabled = false
[dbus]
enabled = %v
`, n.h.SysRoot(), n.h.ProcRoot(), n.h.DevRoot(), n.h.MetadataPath(), n.events, c.dbus)
	if c.connector != "" {
		fmt.Fprintf(&sb, "[sinks.connector]\nsocket = %q\n", "unix://"+c.connector)
		if c.batch != "" {
			fmt.Fprintf(&sb, "batchInterval = %q\n", c.batch)
		}
	}
	sb.WriteString(c.tables)
	return sb.String()
}

func (n *node) writeIntegConfig(c integConfig) {
	n.t.Helper()
	if err := os.WriteFile(n.cfg, []byte(n.configText(c)), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// waitLog waits until the daemon's stderr (since its last start) satisfies f.
func (n *node) waitLog(what string, f func(log string) bool) {
	n.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for time.Now().Before(deadline) {
		if f(n.stderr.String()) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.t.Fatalf("daemon log never showed %s:\n%s", what, n.stderr.Tail())
}

func (n *node) waitReadyLog() {
	n.t.Helper()
	n.waitLog("the first complete poll", func(l string) bool { return strings.Contains(l, "first poll complete") })
}

var generationRe = regexp.MustCompile(`configuration applied.* generation=(\d+)`)

// logGeneration is the newest configuration generation the daemon logged
// since its last start (1, the start-up configuration, logs nothing).
func (n *node) logGeneration() int {
	g := 1
	for _, m := range generationRe.FindAllStringSubmatch(n.stderr.String(), -1) {
		if v, err := strconv.Atoi(m[1]); err == nil && v > g {
			g = v
		}
	}
	return g
}

// busNode is a daemon on a private system bus with a Go client on it.
type busNode struct {
	*node
	bus *dbustest.Bus
	cl  *dbusapi.Client
}

func newBusNode(t *testing.T, shape string, c integConfig, opts dbustest.Options) *busNode {
	t.Helper()
	bus := dbustest.Start(t, opts)
	n := newNode(t, shape, "")
	c.dbus = true
	n.writeIntegConfig(c)
	n.env = []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus.Address}
	cl, err := dbusapi.Dial(bus.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return &busNode{node: n, bus: bus, cl: cl}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitManager polls the Manager properties until f accepts them (the daemon
// may not own its name yet).
func (b *busNode) waitManager(what string, f func(m dbusapi.ManagerView) bool) dbusapi.ManagerView {
	b.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	var last error
	for time.Now().Before(deadline) {
		m, err := b.cl.Manager(ctxT(b.t))
		if err == nil && f(m) {
			return m
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("manager never showed %s (last error %v)\nstderr:\n%s", what, last, b.stderr.Tail())
	return dbusapi.ManagerView{}
}

func (b *busNode) waitReady() dbusapi.ManagerView {
	b.t.Helper()
	return b.waitManager("Ready", func(m dbusapi.ManagerView) bool { return m.Ready })
}

func (b *busNode) waitPort(dev string, port int, what string, f func(p dbusapi.PortView) bool) dbusapi.PortView {
	b.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	var last error
	var lastView dbusapi.PortView
	for time.Now().Before(deadline) {
		p, err := b.cl.Port(ctxT(b.t), dev, port)
		if err == nil && f(p) {
			return p
		}
		last, lastView = err, p
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("port %s/%d never showed %s (last error %v, view %+v)\nstderr:\n%s", dev, port, what, last, lastView, b.stderr.Tail())
	return dbusapi.PortView{}
}

// busctl runs the real busctl against the private bus, as root or, with
// nobody set, as user nobody with no supplementary groups.
func (b *busNode) busctl(nobody bool, args ...string) (string, string, error) {
	a := append([]string{"--address=" + b.bus.Address}, args...)
	var cmd *exec.Cmd
	if nobody {
		if _, err := exec.LookPath("setpriv"); err != nil {
			component.Missing(b.t, "setpriv not installed: cannot run busctl as another user")
		}
		cmd = exec.Command("setpriv", append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups", "busctl"}, a...)...)
	} else {
		cmd = exec.Command("busctl", a...)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (b *busNode) mustBusctl(args ...string) string {
	b.t.Helper()
	out, errOut, err := b.busctl(false, args...)
	if err != nil {
		b.t.Fatalf("busctl %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func needBusctl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("busctl"); err != nil {
		component.Missing(t, "busctl not installed (systemd): cannot drive the API as operators do")
	}
}

// subscribe opens a second connection that receives every signal the
// daemon sends on its objects.
func subscribe(t *testing.T, bus *dbustest.Bus) chan *dbus.Signal {
	t.Helper()
	conn := bus.Connect(t)
	if err := conn.AddMatchSignal(dbus.WithMatchSender(dbusapi.BusName)); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *dbus.Signal, 4096)
	conn.Signal(ch)
	return ch
}

// monitoredPorts is what the simulator says the daemon must watch: every
// port of every physical function outside the management role.
func monitoredPorts(n *node) []string {
	var out []string
	for _, d := range n.h.Devices() {
		if d.IsVF || d.ExpectedRole == topology.RoleManagement {
			continue
		}
		for p := 1; p <= d.Ports; p++ {
			out = append(out, string(dbusapi.PortPath(d.Name, p)))
		}
	}
	slices.Sort(out)
	return out
}

func portPaths(tree string) []string {
	var out []string
	for _, l := range strings.Fields(tree) {
		if strings.HasPrefix(l, string(dbusapi.PortPathBase)+"/") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// TestIntegration_DBus_TreeIntrospectionAndFaultSignals covers DESIGN.md
// section 5 from an operator's seat: the object tree, introspection, a
// fault flipping Healthy with PropertiesChanged and HealthEvent, ListEvents
// order, and port objects leaving and returning with the device.
func TestIntegration_DBus_TreeIntrospectionAndFaultSignals(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	b := newBusNode(t, "dgx-h100", integConfig{}, dbustest.Options{})
	sigs := subscribe(t, b.bus)
	b.start()
	mgr := b.waitReady()
	want := monitoredPorts(b.node)
	if int(mgr.MonitoredPorts) != len(want) || mgr.NodeName != "bb-node" || !mgr.Healthy || mgr.ConfigGeneration != 1 {
		t.Fatalf("manager %+v, want %d ports", mgr, len(want))
	}

	// The tree: the manager and one object per monitored port, escaped.
	tree := b.mustBusctl("--list", "tree", dbusapi.BusName)
	if !strings.Contains(tree, string(dbusapi.RootPath)+"\n") {
		t.Fatalf("tree lacks the manager:\n%s", tree)
	}
	if got := portPaths(tree); !slices.Equal(got, want) {
		t.Fatalf("tree ports\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(tree, "/org/nichealth/NicHealth1/port/mlx5_5f0_1") {
		t.Fatalf("mlx5_0 port 1 not at its escaped path:\n%s", tree)
	}

	// Introspection shows the manager's methods, properties and signal.
	intro := b.mustBusctl("introspect", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface)
	for _, m := range []string{".AcknowledgeReset", ".GetPort", ".ListEvents", ".Reload", ".HealthEvent", ".ConfigGeneration", ".LastReloadError", ".FatalPorts"} {
		if !strings.Contains(intro, m) {
			t.Fatalf("introspection lacks %s:\n%s", m, intro)
		}
	}
	if !regexp.MustCompile(`\.AcknowledgeReset\s+method\s+sus\s`).MatchString(intro) {
		t.Fatalf("AcknowledgeReset signature not sus:\n%s", intro)
	}
	portIntro := b.mustBusctl("introspect", dbusapi.BusName, string(dbusapi.PortPath("mlx5_3", 1)), dbusapi.PortIface)
	for _, p := range []string{".Healthy", ".Fatal", ".LatchedBreaches", ".Counters", ".State", ".PhysState"} {
		if !strings.Contains(portIntro, p) {
			t.Fatalf("port introspection lacks %s:\n%s", p, portIntro)
		}
	}

	events, err := b.cl.WatchEvents(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// Fault: mlx5_3 goes down.
	path3 := dbusapi.PortPath("mlx5_3", 1)
	if err := b.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	dbustest.WaitSignal(t, sigs, func(s *dbus.Signal) bool {
		if s.Path != path3 || s.Name != "org.freedesktop.DBus.Properties.PropertiesChanged" || len(s.Body) < 2 {
			return false
		}
		ch, _ := s.Body[1].(map[string]dbus.Variant)
		h, ok := ch["Healthy"]
		return ok && h.Value() == false
	})
	var fatal event.Event
	deadline := time.After(15 * time.Second)
	for fatal.ID == "" {
		select {
		case rec := <-events:
			var e event.Event
			if err := json.Unmarshal([]byte(rec.JSON), &e); err != nil {
				t.Fatalf("HealthEvent json: %v", err)
			}
			if e.Device() == "mlx5_3" && e.Kind == event.KindPortFatal {
				fatal = e
			}
		case <-deadline:
			t.Fatal("no HealthEvent for the mlx5_3 fault")
		}
	}
	if out := b.mustBusctl("get-property", dbusapi.BusName, string(path3), dbusapi.PortIface, "Healthy"); strings.TrimSpace(out) != "b false" {
		t.Fatalf("busctl Healthy: %q", out)
	}
	pv, err := b.cl.Port(ctxT(t), "mlx5_3", 1)
	if err != nil || pv.Healthy || !pv.Fatal || pv.State != "DOWN" || pv.PhysState != "Disabled" || pv.LastChangeUSec == 0 {
		t.Fatalf("Go client view %+v err %v", pv, err)
	}
	m := b.waitManager("mlx5_3 fatal", func(m dbusapi.ManagerView) bool { return !m.Healthy })
	if !slices.Equal(m.FatalPorts, []string{"mlx5_3/1"}) {
		t.Fatalf("FatalPorts %v", m.FatalPorts)
	}
	// The JSON-lines file carries the same event (same id).
	b.waitEvent("fatal in JSONL", func(e event.Event) bool { return e.ID == fatal.ID })

	// ListEvents(0): everything kept, increasing seq, the fault included.
	recs, err := b.cl.ListEvents(ctxT(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, r := range recs {
		if i > 0 && r.Seq <= recs[i-1].Seq {
			t.Fatalf("ListEvents seq not increasing at %d: %d after %d", i, r.Seq, recs[i-1].Seq)
		}
		found = found || strings.Contains(r.JSON, fatal.ID)
	}
	if !found {
		t.Fatalf("ListEvents(0) lacks the fault %s: %+v", fatal.ID, recs)
	}
	// ListEvents(since) resumes right after since.
	if len(recs) < 2 {
		t.Fatalf("ListEvents(0) kept only %d events", len(recs))
	}
	mid := len(recs) / 2
	later, err := b.cl.ListEvents(ctxT(t), recs[mid].Seq)
	if err != nil || len(later) < len(recs)-mid-1 || (len(later) > 0 && later[0] != recs[mid+1]) {
		t.Fatalf("ListEvents(%d) = %d records (err %v), want %d from seq %d", recs[mid].Seq, len(later), err, len(recs)-mid-1, recs[mid+1].Seq)
	}

	// The device falls off the bus: its port object stays, MISSING and
	// fatal once the disappearance is declared (DESIGN.md section 9), in
	// every view, until the device comes back.
	path6 := dbusapi.PortPath("mlx5_6", 1)
	if err := b.h.RemoveDevice("mlx5_6"); err != nil {
		t.Fatal(err)
	}
	b.waitEvent("mlx5_6 disappeared", portEvent("mlx5_6", event.KindDeviceDisappeared))
	b.waitPort("mlx5_6", 1, "missing and fatal", func(p dbusapi.PortView) bool {
		return p.State == "MISSING" && p.Fatal && !p.Healthy && strings.Contains(p.Message, "disappeared")
	})
	b.waitManager("mlx5_6 counted fatal", func(m dbusapi.ManagerView) bool { return slices.Contains(m.FatalPorts, "mlx5_6/1") })
	if tree := b.mustBusctl("--list", "tree", dbusapi.BusName); !strings.Contains(tree, string(path6)) {
		t.Fatalf("the missing device's port left the tree:\n%s", tree)
	}
	if err := b.h.RestoreDevice("mlx5_6"); err != nil {
		t.Fatal(err)
	}
	b.waitEvent("mlx5_6 reappeared", portEvent("mlx5_6", event.KindDeviceReappeared))
	b.waitPort("mlx5_6", 1, "healthy again", func(p dbusapi.PortView) bool { return p.Healthy })
	b.stop()
}

// TestIntegration_DBus_AcknowledgeResetEndToEnd follows one latched breach
// from the counter to the state file: latch, operator acknowledgement as
// root, recovery event naming the uid, latch gone on D-Bus and on disk, and
// no new breach after a restart.
func TestIntegration_DBus_AcknowledgeResetEndToEnd(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	b := newBusNode(t, "dgx-h100", integConfig{}, dbustest.Options{})
	b.start()
	b.waitReady()
	path0 := dbusapi.PortPath("mlx5_0", 1)
	key := counters.Key("mlx5_0", 1, "link_downed")

	if err := b.h.AddCounter("mlx5_0", 1, "counters/link_downed", 1); err != nil {
		t.Fatal(err)
	}
	breach := b.waitEvent("link_downed breach", func(e event.Event) bool {
		return e.Device() == "mlx5_0" && e.Kind == event.KindCounterBreach && slices.Contains(e.ErrorCode, "link_downed")
	})
	if !breach.IsFatal || breach.CheckName != event.InfiniBandStateCheck {
		t.Fatalf("breach %+v", breach)
	}
	pv := b.waitPort("mlx5_0", 1, "latched link_downed", func(p dbusapi.PortView) bool {
		return slices.Contains(p.LatchedBreaches(), "link_downed")
	})
	if !pv.Fatal || pv.Healthy {
		t.Fatalf("latched fatal breach but port view %+v", pv)
	}
	if out := b.mustBusctl("get-property", dbusapi.BusName, string(path0), dbusapi.PortIface, "LatchedBreaches"); !strings.Contains(out, `"link_downed"`) {
		t.Fatalf("busctl LatchedBreaches: %q", out)
	}

	// Error paths first, while the latch is there.
	err := b.cl.AcknowledgeReset(ctxT(t), "mlx5_0", 1, "symbol_error")
	var re *dbusapi.RemoteError
	if !errors.Is(err, dbusapi.ErrNotLatched) || !errors.As(err, &re) || re.Name != dbusapi.ErrNameNotLatched {
		t.Fatalf("acknowledge of a counter that is not latched: %v", err)
	}
	err = b.cl.AcknowledgeReset(ctxT(t), "mlx5_99", 1, "")
	if !errors.Is(err, dbusapi.ErrNoSuchPort) || !errors.As(err, &re) || re.Name != dbusapi.ErrNameNoSuchPort {
		t.Fatalf("acknowledge on an unknown port: %v", err)
	}
	// busctl prints the daemon's error message; the D-Bus name is checked
	// above through the Go client.
	if _, errOut, err := b.busctl(false, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface,
		"AcknowledgeReset", "sus", "mlx5_0", "1", "port_rcv_errors"); err == nil || !strings.Contains(errOut, "port_rcv_errors") {
		t.Fatalf("busctl acknowledge of an unlatched counter: err %v, %q", err, errOut)
	}

	// The real thing, as root.
	before := len(b.read())
	if err := b.cl.AcknowledgeReset(ctxT(t), "mlx5_0", 1, "link_downed"); err != nil {
		t.Fatalf("AcknowledgeReset as root: %v", err)
	}
	rec := b.waitEventAfter(before, "acknowledged recovery", func(e event.Event) bool {
		return e.Device() == "mlx5_0" && e.Kind == event.KindCounterRecovered && slices.Contains(e.ErrorCode, "link_downed")
	})
	if !strings.Contains(rec.Message, "uid 0") || !rec.IsHealthy || rec.CheckName != event.InfiniBandStateCheck {
		t.Fatalf("recovery event %+v", rec)
	}
	b.waitPort("mlx5_0", 1, "latch cleared", func(p dbusapi.PortView) bool {
		return len(p.LatchedBreaches()) == 0 && p.Healthy && !p.Fatal
	})
	if err := b.cl.AcknowledgeReset(ctxT(t), "mlx5_0", 1, ""); !errors.Is(err, dbusapi.ErrNotLatched) {
		t.Fatalf("second acknowledge of the port: %v", err)
	}

	b.stop()
	st, status, err := persist.Load(b.state)
	if err != nil || status != persist.LoadLoaded {
		t.Fatalf("state file: %v %v", status, err)
	}
	if f, ok := memoryOf(st).Counters.BreachFlags[key]; ok && f.Breached {
		t.Fatalf("state file still latches %s: %+v", key, f)
	}

	// Restart: the acknowledged counter stays quiet.
	before = len(b.read())
	b.start()
	b.waitReady()
	if err := b.h.SetPortState("mlx5_2", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	// A later fault is the sync point: the polls before it are done.
	b.waitEventAfter(before, "fatal mlx5_2 after restart", portEvent("mlx5_2", event.KindPortFatal))
	if c := count(b.read()[before:], func(e event.Event) bool {
		return e.Device() == "mlx5_0" && e.Kind == event.KindCounterBreach
	}); c != 0 {
		t.Fatalf("acknowledged breach reported again after restart: %s", summary(b.read()[before:]))
	}
	if p, err := b.cl.Port(ctxT(t), "mlx5_0", 1); err != nil || len(p.LatchedBreaches()) != 0 {
		t.Fatalf("after restart: %+v %v", p.LatchedBreaches(), err)
	}
	b.stop()
}

// TestIntegration_DBus_AccessControl: reading is open to every user,
// mutating is root's (and the admin group's), both by the shipped policy
// file and by the daemon's own uid check when the policy is wide open.
func TestIntegration_DBus_AccessControl(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	if os.Getuid() != 0 {
		component.Missing(t, "needs root to switch to user nobody")
	}
	for _, tc := range []struct {
		name   string
		opts   dbustest.Options
		denied string // what busctl prints for a denied call
	}{
		{"ShippedPolicy", dbustest.Options{}, "Access denied"},
		{"PermissivePolicyDaemonChecks", dbustest.Options{ExtraPolicies: []string{dbustest.PermissivePolicy}}, "needs root or membership in group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBusNode(t, "minimal", integConfig{}, tc.opts)
			b.start()
			b.waitReady()
			if err := b.h.AddCounter("mlx5_0", 1, "counters/link_downed", 1); err != nil {
				t.Fatal(err)
			}
			b.waitPort("mlx5_0", 1, "latched link_downed", func(p dbusapi.PortView) bool {
				return slices.Contains(p.LatchedBreaches(), "link_downed")
			})
			b.waitManager("unhealthy", func(m dbusapi.ManagerView) bool { return !m.Healthy })
			// nobody can read.
			out, errOut, err := b.busctl(true, "get-property", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "Healthy")
			if err != nil || strings.TrimSpace(out) != "b false" {
				t.Fatalf("nobody reading Healthy: %v %q %q", err, out, errOut)
			}
			if _, errOut, err := b.busctl(true, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "ListEvents", "t", "0"); err != nil {
				t.Fatalf("nobody calling ListEvents: %v %s", err, errOut)
			}
			// nobody cannot acknowledge or reload.
			for _, call := range [][]string{
				{"AcknowledgeReset", "sus", "mlx5_0", "1", "link_downed"},
				{"Reload"},
			} {
				args := append([]string{"call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface}, call...)
				_, errOut, err := b.busctl(true, args...)
				if err == nil || !strings.Contains(errOut, tc.denied) {
					t.Fatalf("nobody calling %s: err %v, stderr %q", call[0], err, errOut)
				}
			}
			if p, err := b.cl.Port(ctxT(t), "mlx5_0", 1); err != nil || !slices.Contains(p.LatchedBreaches(), "link_downed") {
				t.Fatalf("a denied acknowledge changed the latch: %v %v", p.LatchedBreaches(), err)
			}
			if m, err := b.cl.Manager(ctxT(t)); err != nil || m.ConfigGeneration != 1 {
				t.Fatalf("a denied reload reloaded: %+v %v", m, err)
			}
			// root can.
			if _, errOut, err := b.busctl(false, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface,
				"AcknowledgeReset", "sus", "mlx5_0", "1", "link_downed"); err != nil {
				t.Fatalf("root acknowledge: %v %s", err, errOut)
			}
			b.waitEvent("acknowledged recovery", func(e event.Event) bool {
				return e.Kind == event.KindCounterRecovered && strings.Contains(e.Message, "uid 0")
			})
			b.stop()
			if c := count(b.read(), func(e event.Event) bool {
				return e.Kind == event.KindCounterRecovered && strings.Contains(e.Message, "uid 65534")
			}); c != 0 {
				t.Fatal("nobody's acknowledgement went through")
			}
		})
	}
}

// TestIntegration_DBus_Reload: Reload() applies the file and bumps
// ConfigGeneration; an invalid file is refused with ConfigRefused, the
// reason is kept in LastReloadError, and the running configuration stays.
func TestIntegration_DBus_Reload(t *testing.T) {
	t.Parallel()
	b := newBusNode(t, "minimal", integConfig{}, dbustest.Options{})
	b.start()
	m := b.waitReady()
	if m.ConfigGeneration != 1 || m.LastReloadError != "" || m.ConfigPath != b.cfg {
		t.Fatalf("manager at start %+v", m)
	}
	if err := b.cl.Reload(ctxT(t)); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	// Properties follow the daemon's state at its next refresh.
	if m := b.waitManager("generation 2", func(m dbusapi.ManagerView) bool { return m.ConfigGeneration >= 2 }); m.ConfigGeneration != 2 {
		t.Fatalf("after one Reload: %+v", m)
	}

	valid, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	invalid := strings.Replace(string(valid), `readTimeout = "2s"`, `readTimeout = "2s"`+"\npollingInterval = \"fast\"", 1)
	if err := os.WriteFile(b.cfg, []byte(invalid), 0o644); err != nil {
		t.Fatal(err)
	}
	err = b.cl.Reload(ctxT(t))
	var re *dbusapi.RemoteError
	if !errors.Is(err, dbusapi.ErrConfigRefused) || !errors.As(err, &re) || re.Name != dbusapi.ErrNameConfigRefused ||
		!strings.Contains(err.Error(), "pollingInterval") || !strings.Contains(err.Error(), b.cfg) {
		t.Fatalf("Reload of an invalid file: %v", err)
	}
	m = b.waitManager("LastReloadError", func(m dbusapi.ManagerView) bool { return m.LastReloadError != "" })
	if m.ConfigGeneration != 2 || !strings.Contains(m.LastReloadError, "pollingInterval") {
		t.Fatalf("after a refused reload: %+v", m)
	}
	// The old configuration keeps running.
	if err := b.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	b.waitPort("mlx5_0", 1, "fatal after a refused reload", func(p dbusapi.PortView) bool { return p.Fatal })

	// Fixing the file (the watcher sees it) clears the error.
	if err := os.WriteFile(b.cfg, valid, 0o644); err != nil {
		t.Fatal(err)
	}
	m = b.waitManager("the fixed file applied", func(m dbusapi.ManagerView) bool {
		return m.LastReloadError == "" && m.ConfigGeneration >= 3
	})
	b.stop()
}

// TestIntegration_DBus_ListEventsKeepsStartupEvents: ListEvents(0) is
// documented (dbusapi/API.md) to return every kept event, with a gap in seq
// meaning only that the 1024-event ring overflowed. The first poll after a
// fresh start emits the check-scoped clears and baselines; a client that
// connects after start-up must find them, not a gap.
func TestIntegration_DBus_ListEventsKeepsStartupEvents(t *testing.T) {
	t.Parallel()
	b := newBusNode(t, "minimal", integConfig{}, dbustest.Options{})
	// The daemon is pointed at a socket path that appears only once the
	// start-up events are out, as when dbus.service starts after
	// nichealthd or restarts under it.
	link := filepath.Join(b.dir, "late_bus_socket")
	b.env = []string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + link}
	b.start()
	b.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	if err := b.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	b.waitEvent("fatal", portEvent("mlx5_0", event.KindPortFatal))
	if err := os.Symlink(filepath.Join(b.bus.Dir, "system_bus_socket"), link); err != nil {
		t.Fatal(err)
	}
	b.waitReady()
	evs := b.read()
	recs, err := b.cl.ListEvents(ctxT(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, r := range recs {
		e, err := r.Event()
		if err != nil {
			t.Fatal(err)
		}
		kept[e.ID] = true
	}
	var missing []string
	for _, e := range evs {
		if !kept[e.ID] {
			missing = append(missing, fmt.Sprintf("%s: %s", e.Kind, e.Message))
		}
	}
	if len(missing) > 0 {
		t.Errorf("ListEvents(0) returned %d records; %d of the %d events in the JSON-lines file are missing, e.g. %q",
			len(recs), len(missing), len(evs), missing[0])
	}
	b.stop()
}
