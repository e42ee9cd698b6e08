package dbusapi_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/event"

	"github.com/nichealth/nichealthd/internal/component"
)

type fixture struct {
	bus    *dbustest.Bus
	be     *dbustest.Backend
	srv    *dbusapi.Server
	conn   *dbus.Conn // a separate client connection
	client *dbusapi.Client
}

func newFixture(t testing.TB, bopts dbustest.Options, sopts dbusapi.Options) *fixture {
	t.Helper()
	bus := dbustest.Start(t, bopts)
	be := dbustest.NewBackend(dbustest.SampleManager(), dbustest.SamplePorts())
	srv, err := dbusapi.Serve(bus.Connect(t), be, sopts)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	conn := bus.Connect(t)
	return &fixture{bus: bus, be: be, srv: srv, conn: conn, client: dbusapi.NewClient(conn, "")}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func (f *fixture) obj(p dbus.ObjectPath) dbus.BusObject { return f.conn.Object(dbusapi.BusName, p) }

// subscribe delivers the signals matching opts to the returned channel.
func (f *fixture) subscribe(t testing.TB, opts ...dbus.MatchOption) chan *dbus.Signal {
	t.Helper()
	if err := f.conn.AddMatchSignal(opts...); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *dbus.Signal, 256)
	f.conn.Signal(ch)
	t.Cleanup(func() { f.conn.RemoveSignal(ch) })
	return ch
}

func busctl(t testing.TB, f *fixture, asUser []string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("busctl"); err != nil {
		component.Missing(t, "busctl not installed")
	}
	var cmd *exec.Cmd
	if len(asUser) > 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			component.Missing(t, "setpriv not installed")
		}
		if os.Geteuid() != 0 {
			component.Missing(t, "running busctl as another user needs root")
		}
		cmd = exec.Command("setpriv", append(append(asUser, "busctl", "--system"), args...)...)
	} else {
		cmd = exec.Command("busctl", append([]string{"--system"}, args...)...)
	}
	cmd.Env = f.bus.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var nobody = []string{"--reuid=nobody", "--regid=nogroup", "--clear-groups"}

func asAdmin(t *testing.T) []string {
	if adminUser == "" {
		component.Missing(t, "no admin test user (needs root and useradd): the admin-group rule cannot be exercised")
	}
	return []string{"--reuid=" + adminUser, "--regid=" + adminUser, "--init-groups"}
}

// zeroArg builds a placeholder argument for an introspected input type.
func zeroArg(t *testing.T, sig string) any {
	switch sig {
	case "s":
		return ""
	case "u":
		return uint32(0)
	case "t":
		return uint64(0)
	case "v":
		return dbus.MakeVariant("")
	}
	t.Fatalf("no placeholder for input type %s", sig)
	return nil
}

func parseIntrospection(t *testing.T, f *fixture, p dbus.ObjectPath) introspect.Node {
	t.Helper()
	var x string
	if err := f.obj(p).Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Store(&x); err != nil {
		t.Fatalf("Introspect %s: %v", p, err)
	}
	var n introspect.Node
	if err := xml.Unmarshal([]byte(x), &n); err != nil {
		t.Fatalf("introspection XML of %s does not parse: %v\n%s", p, err, x)
	}
	return n
}

// TestDBus_5_IntrospectionMatchesExport proves the XML is complete and
// accurate: every announced method is callable (no UnknownMethod /
// UnknownInterface), every announced property is served with the announced
// type, GetAll returns exactly the announced set, and nothing else answers.
func TestDBus_5_IntrospectionMatchesExport(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	port := dbusapi.PortPath("mlx5_0", 1)
	for _, p := range []dbus.ObjectPath{dbusapi.RootPath, port, dbusapi.PortPathBase, "/", "/org", "/org/nichealth"} {
		n := parseIntrospection(t, f, p)
		seen := map[string]bool{}
		hasProps := false
		for _, iface := range n.Interfaces {
			hasProps = hasProps || iface.Name == "org.freedesktop.DBus.Properties"
		}
		for _, iface := range n.Interfaces {
			seen[iface.Name] = true
			for _, m := range iface.Methods {
				var in []any
				for _, a := range m.Args {
					if a.Direction == "in" {
						in = append(in, zeroArg(t, a.Type))
					}
				}
				// busctl prints the reply's real wire signature first.
				var insig string
				args := []string{"call", dbusapi.BusName, string(p), iface.Name, m.Name}
				var outs string
				for _, a := range m.Args {
					if a.Direction == "in" {
						insig += a.Type
					} else {
						outs += a.Type
					}
				}
				if insig != "" {
					args = append(args, insig)
					for _, v := range in {
						switch v.(type) {
						case dbus.Variant:
							args = append(args, "s", "")
						default:
							args = append(args, fmt.Sprint(v))
						}
					}
				}
				out, err := busctl(t, f, nil, args...)
				for _, bad := range []string{"Unknown method", "Unknown interface", "Invalid arguments", "UnknownMethod", "UnknownInterface", "InvalidArgs"} {
					if strings.Contains(out, bad) {
						t.Errorf("%s %s.%s is announced but not served: %s", p, iface.Name, m.Name, out)
					}
				}
				if err == nil {
					got, _, _ := strings.Cut(strings.TrimSpace(out), " ")
					if got != outs {
						t.Errorf("%s %s.%s returned %q, XML says %q", p, iface.Name, m.Name, got, outs)
					}
				}
			}
			if !hasProps {
				if len(iface.Properties) > 0 {
					t.Errorf("%s announces properties on %s but no Properties interface", p, iface.Name)
				}
				continue
			}
			var all map[string]dbus.Variant
			if err := f.obj(p).Call("org.freedesktop.DBus.Properties.GetAll", 0, iface.Name).Store(&all); err != nil {
				t.Errorf("%s GetAll(%s): %v", p, iface.Name, err)
			}
			var want []string
			for _, prop := range iface.Properties {
				want = append(want, prop.Name)
				if prop.Access != "read" {
					t.Errorf("%s.%s access %q, want read", iface.Name, prop.Name, prop.Access)
				}
				v, err := f.obj(p).GetProperty(iface.Name + "." + prop.Name)
				if err != nil {
					t.Errorf("%s Get %s.%s: %v", p, iface.Name, prop.Name, err)
					continue
				}
				if v.Signature().String() != prop.Type {
					t.Errorf("%s %s.%s has type %s, XML says %s", p, iface.Name, prop.Name, v.Signature(), prop.Type)
				}
			}
			var got []string
			for k := range all {
				got = append(got, k)
			}
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s GetAll(%s) = %v, XML announces %v", p, iface.Name, got, want)
			}
		}
		for _, want := range []string{"org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable"} {
			if !seen[want] {
				t.Errorf("%s does not announce %s", p, want)
			}
		}
		// Something not announced is not served.
		if err := f.obj(p).Call(dbusapi.ManagerIface+".NoSuchMethod", 0).Err; err == nil {
			t.Errorf("%s answered an unannounced method", p)
		}
		if _, err := f.obj(p).GetProperty("org.example.Nope.X"); err == nil {
			t.Errorf("%s answered a property of an unknown interface", p)
		}
	}
	for p, child := range map[dbus.ObjectPath]string{"/": "org", "/org": "nichealth", "/org/nichealth": "NicHealth1"} {
		if n := parseIntrospection(t, f, p); len(n.Children) != 1 || n.Children[0].Name != child {
			t.Errorf("%s children = %+v, want %s", p, n.Children, child)
		}
	}
	for _, p := range []dbus.ObjectPath{dbusapi.PortPath("mlx5_9", 1), dbusapi.RootPath + "/nope", "/org/other"} {
		if err := f.obj(p).Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Err; err == nil {
			t.Errorf("%s: introspection of a non-object succeeded", p)
		}
	}
	root := parseIntrospection(t, f, dbusapi.RootPath)
	if len(root.Children) != 1 || root.Children[0].Name != "port" {
		t.Errorf("root children = %+v, want the port node", root.Children)
	}
	ports := parseIntrospection(t, f, dbusapi.PortPathBase)
	var kids []string
	for _, c := range ports.Children {
		kids = append(kids, c.Name)
	}
	sort.Strings(kids)
	if want := []string{"mlx5_5f0_1", "mlx5_5f1_1", "mlx5_5fbond_5f0_1"}; !slices.Equal(kids, want) {
		t.Errorf("port node children = %v, want %v", kids, want)
	}
}

// TestDBus_5_SignalsMatchIntrospection checks the signatures of every
// signal actually emitted against the XML.
func TestDBus_5_SignalsMatchIntrospection(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	announced := map[string]string{}
	for _, p := range []dbus.ObjectPath{dbusapi.RootPath, dbusapi.PortPath("mlx5_0", 1)} {
		for _, iface := range parseIntrospection(t, f, p).Interfaces {
			for _, s := range iface.Signals {
				var sig string
				for _, a := range s.Args {
					sig += a.Type
				}
				announced[iface.Name+"."+s.Name] = sig
			}
		}
	}
	ch := f.subscribe(t, dbus.WithMatchSender(dbusapi.BusName))
	f.be.Update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		(*ports)[0].State = "1: DOWN"
		*ports = (*ports)[1:]
		m.Healthy = false
	})
	f.srv.Refresh()
	f.be.Update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		*ports = append(*ports, dbustest.SamplePorts()[0])
	})
	f.srv.Refresh()
	f.srv.Publish(sampleEvent(), 1)
	want := map[string]bool{
		"org.freedesktop.DBus.ObjectManager.InterfacesRemoved": true, "org.freedesktop.DBus.ObjectManager.InterfacesAdded": true,
		"org.freedesktop.DBus.Properties.PropertiesChanged": true, dbusapi.ManagerIface + ".HealthEvent": true,
	}
	for len(want) > 0 {
		s := dbustest.WaitSignal(t, ch, func(s *dbus.Signal) bool { return !strings.HasPrefix(s.Name, "org.freedesktop.DBus.Name") })
		sig, ok := announced[s.Name]
		if !ok {
			t.Fatalf("emitted %s, which no interface announces", s.Name)
		}
		if got := dbus.SignatureOf(s.Body...).String(); got != sig {
			t.Errorf("%s has signature %s, XML says %s", s.Name, got, sig)
		}
		delete(want, s.Name)
	}
}

func sampleEvent() event.Event {
	return event.New(event.Spec{
		Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: true,
		Message: "Port mlx5_0 port 1: state DOWN, phys_state Disabled", Device: "mlx5_0", Port: 1,
	}, event.Stamp{NodeName: "gpu-node-1", Now: time.Unix(1700000000, 0)})
}

// TestDBus_5_ObjectManagerAddRemove: a port that stops being monitored
// disappears with InterfacesRemoved, and comes back with InterfacesAdded.
func TestDBus_5_ObjectManagerAddRemove(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	objs, err := f.client.Ports(ctx(t))
	if err != nil || len(objs) != 3 {
		t.Fatalf("Ports = %d, %v", len(objs), err)
	}
	ch := f.subscribe(t, dbus.WithMatchSender(dbusapi.BusName), dbus.WithMatchInterface("org.freedesktop.DBus.ObjectManager"))
	gone := dbusapi.PortPath("mlx5_1", 1)

	f.be.Update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) { *ports = slices.Delete(*ports, 1, 2) })
	f.srv.Refresh()
	s := dbustest.WaitSignal(t, ch, func(s *dbus.Signal) bool { return true })
	if s.Name != "org.freedesktop.DBus.ObjectManager.InterfacesRemoved" || s.Path != dbusapi.RootPath || s.Body[0] != gone {
		t.Fatalf("got %s %v, want InterfacesRemoved of %s", s.Name, s.Body, gone)
	}
	if ifs := s.Body[1].([]string); !slices.Contains(ifs, dbusapi.PortIface) {
		t.Errorf("InterfacesRemoved lists %v", ifs)
	}
	var managed map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	if err := f.obj(dbusapi.RootPath).Call("org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Store(&managed); err != nil {
		t.Fatal(err)
	}
	if _, ok := managed[gone]; ok || len(managed) != 2 {
		t.Errorf("GetManagedObjects still has %s (%d objects)", gone, len(managed))
	}
	if _, err := f.obj(gone).GetProperty(dbusapi.PortIface + ".State"); err == nil {
		t.Errorf("removed object still answers")
	}
	if _, err := f.client.Port(ctx(t), "mlx5_1", 1); !errors.Is(err, dbusapi.ErrNoSuchPort) {
		t.Errorf("Port(mlx5_1,1) after removal: %v, want ErrNoSuchPort", err)
	}

	back := dbustest.SamplePorts()[1]
	back.State = "1: DOWN"
	f.be.Update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) { *ports = append(*ports, back) })
	f.srv.Refresh()
	s = dbustest.WaitSignal(t, ch, func(s *dbus.Signal) bool { return true })
	if s.Name != "org.freedesktop.DBus.ObjectManager.InterfacesAdded" || s.Body[0] != gone {
		t.Fatalf("got %s %v, want InterfacesAdded of %s", s.Name, s.Body, gone)
	}
	props := s.Body[1].(map[string]map[string]dbus.Variant)[dbusapi.PortIface]
	if props["State"].Value() != "1: DOWN" || props["Device"].Value() != "mlx5_1" {
		t.Errorf("InterfacesAdded carries %v", props)
	}
	if p, err := f.client.Port(ctx(t), "mlx5_1", 1); err != nil || p.State != "1: DOWN" {
		t.Errorf("Port after re-add = %+v, %v", p, err)
	}
}

// TestDBus_5_PropertiesChangedOnlyOnChange: a Refresh with nothing changed
// sends nothing; counter values (EmitsChangedSignal=false) send nothing;
// a state change sends exactly the changed properties.
func TestDBus_5_PropertiesChangedOnlyOnChange(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	ch := f.subscribe(t, dbus.WithMatchSender(dbusapi.BusName), dbus.WithMatchInterface("org.freedesktop.DBus.Properties"), dbus.WithMatchMember("PropertiesChanged"))

	f.srv.Refresh() // nothing changed
	f.be.Update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		m.LastPollUSec += 1_000_000        // not signalled
		(*ports)[0].Counters[1].Value += 5 // not signalled
	})
	f.srv.Refresh()
	// The marker: the first PropertiesChanged to arrive must be this one,
	// because one connection's signals arrive in order.
	f.be.Update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.State, p.PhysState, p.Healthy, p.Fatal = "1: DOWN", "3: Disabled", false, true
		p.Counters[0].Breached = true
	})
	f.srv.Refresh()
	s := dbustest.WaitSignal(t, ch, func(*dbus.Signal) bool { return true })
	if s.Path != dbusapi.PortPath("mlx5_0", 1) || s.Body[0] != dbusapi.PortIface {
		t.Fatalf("first PropertiesChanged was %s %v: a refresh without a signalled change emitted", s.Path, s.Body)
	}
	changed := s.Body[1].(map[string]dbus.Variant)
	var names []string
	for k := range changed {
		names = append(names, k)
	}
	sort.Strings(names)
	// The verdict moves with them: Verdict and the port's Conditions.
	if want := []string{"Conditions", "Fatal", "Healthy", "LatchedBreaches", "PhysState", "State", "Verdict"}; !slices.Equal(names, want) {
		t.Errorf("changed = %v, want %v", names, want)
	}
	if lb := changed["LatchedBreaches"].Value().([]string); !slices.Equal(lb, []string{"link_downed"}) {
		t.Errorf("LatchedBreaches = %v", lb)
	}

	f.be.Update(func(m *dbusapi.ManagerView, _ *[]dbusapi.PortView) {
		m.Healthy, m.FatalPorts = false, []string{"mlx5_0/1"}
	})
	f.srv.Refresh()
	s = dbustest.WaitSignal(t, ch, func(*dbus.Signal) bool { return true })
	// Healthy, FatalPorts, Verdict and Conditions: the node's verdict.
	if s.Path != dbusapi.RootPath || s.Body[0] != dbusapi.ManagerIface || len(s.Body[1].(map[string]dbus.Variant)) != 4 {
		t.Errorf("manager change: %s %v", s.Path, s.Body)
	}
}

// TestDBus_5_HealthEventAndListEvents: Publish emits the signal and feeds
// a bounded ring that ListEvents reads with "since" semantics.
func TestDBus_5_HealthEventAndListEvents(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{RingSize: 4})
	events, err := f.client.WatchEvents(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 6; seq++ {
		ev := sampleEvent()
		ev.Message = fmt.Sprintf("event %d", seq)
		f.srv.Publish(ev, seq)
	}
	for seq := uint64(1); seq <= 6; seq++ {
		select {
		case rec := <-events:
			ev, err := rec.Event()
			if err != nil || rec.Seq != seq || ev.Message != fmt.Sprintf("event %d", seq) || ev.Device() != "mlx5_0" || !ev.IsFatal {
				t.Fatalf("signal %d: %+v %v", seq, rec, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no HealthEvent signal")
		}
	}
	// The raw signal carries the flattened fields too.
	var x map[string]any
	_ = x
	cases := []struct {
		since uint64
		want  []uint64
	}{{0, []uint64{3, 4, 5, 6}}, {4, []uint64{5, 6}}, {6, nil}, {100, nil}}
	for _, c := range cases {
		recs, err := f.client.ListEvents(ctx(t), c.since)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, r := range recs {
			got = append(got, r.Seq)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ListEvents(%d) = %v, want %v", c.since, got, c.want)
		}
	}
	out, err := busctl(t, f, nil, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "ListEvents", "t", "5")
	if err != nil || !strings.HasPrefix(out, "a(ts) 1 6 ") {
		t.Errorf("busctl ListEvents: %v %s", err, out)
	}
}

func TestDBus_5_HealthEventSignalFields(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	ch := f.subscribe(t, dbus.WithMatchSender(dbusapi.BusName), dbus.WithMatchMember("HealthEvent"))
	f.srv.Publish(sampleEvent(), 42)
	s := dbustest.WaitSignal(t, ch, func(*dbus.Signal) bool { return true })
	want := []any{uint64(42), event.InfiniBandStateCheck, "mlx5_0", uint32(1), true, false, "Port mlx5_0 port 1: state DOWN, phys_state Disabled"}
	if fmt.Sprint(s.Body[:7]) != fmt.Sprint(want) || s.Path != dbusapi.RootPath {
		t.Errorf("HealthEvent body = %v", s.Body)
	}
}

// TestDBus_5_AcknowledgeResetEndToEnd maps every backend outcome to its
// D-Bus error and back.
func TestDBus_5_AcknowledgeResetEndToEnd(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	f.be.Update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		(*ports)[0].Counters[0].Breached = true
		(*ports)[0].Counters[0].BreachedSinceUSec = 5
	})
	f.srv.Refresh()
	cases := []struct {
		dev     string
		port    int
		counter string
		want    error
		name    string
	}{
		{"mlx5_9", 1, "", dbusapi.ErrNoSuchPort, dbusapi.ErrNameNoSuchPort},
		{"mlx5_0", 1, "symbol_error", dbusapi.ErrNotLatched, dbusapi.ErrNameNotLatched},
		{"mlx5_0", 1, "no_such_counter", dbusapi.ErrInvalidArgument, dbusapi.ErrNameInvalidArgument},
		{"", 1, "", dbusapi.ErrInvalidArgument, dbusapi.ErrNameInvalidArgument},
		{"mlx5_0", 0, "", dbusapi.ErrInvalidArgument, dbusapi.ErrNameInvalidArgument},
		// Port 0 with a PCI address (a NIC function gone from the bus)
		// reaches the backend, which answers for it.
		{"0000:3b:00.0", 0, "", dbusapi.ErrNoSuchPort, dbusapi.ErrNameNoSuchPort},
		{"mlx5_0", 1, "link_downed", nil, ""},
		{"mlx5_0", 1, "", dbusapi.ErrNotLatched, dbusapi.ErrNameNotLatched},
	}
	for _, c := range cases {
		err := f.client.AcknowledgeReset(ctx(t), c.dev, c.port, c.counter)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("ack(%q,%d,%q) = %v, want %v", c.dev, c.port, c.counter, err, c.want)
		}
		var re *dbusapi.RemoteError
		if c.name != "" && (!errors.As(err, &re) || re.Name != c.name) {
			t.Errorf("ack(%q,%d,%q): D-Bus error %v, want %s", c.dev, c.port, c.counter, err, c.name)
		}
	}
	acks := f.be.Acks()
	if len(acks) != 1 || acks[0] != (dbustest.Ack{Device: "mlx5_0", Port: 1, Counter: "link_downed", UID: 0}) {
		t.Errorf("acks = %+v", acks)
	}
	// The server refreshes after a successful acknowledgement.
	v, err := f.obj(dbusapi.PortPath("mlx5_0", 1)).GetProperty(dbusapi.PortIface + ".LatchedBreaches")
	if err != nil || len(v.Value().([]string)) != 0 {
		t.Errorf("LatchedBreaches after ack = %v, %v", v, err)
	}
}

func TestDBus_5_Reload(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	if err := f.client.Reload(ctx(t)); err != nil {
		t.Fatal(err)
	}
	m, err := f.client.Manager(ctx(t))
	if err != nil || m.ConfigGeneration != 2 {
		t.Errorf("generation after reload = %d, %v", m.ConfigGeneration, err)
	}
	f.be.SetReloadError(errors.New("/etc/nichealthd/config.toml: counterDetection.counters[2].threshold: must be > 0"))
	err = f.client.Reload(ctx(t))
	if !errors.Is(err, dbusapi.ErrConfigRefused) || !strings.Contains(err.Error(), "threshold: must be > 0") {
		t.Errorf("refused reload: %v", err)
	}
	m, _ = f.client.Manager(ctx(t))
	if m.ConfigGeneration != 2 || !strings.Contains(m.LastReloadError, "threshold") {
		t.Errorf("after refused reload: %+v", m)
	}
}

func TestDBus_5_PropertiesReadOnly(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	err := f.obj(dbusapi.RootPath).Call("org.freedesktop.DBus.Properties.Set", 0, dbusapi.ManagerIface, "Healthy", dbus.MakeVariant(false)).Err
	var de dbus.Error
	if !errors.As(err, &de) || de.Name != "org.freedesktop.DBus.Error.PropertyReadOnly" {
		t.Errorf("Set Healthy: %v", err)
	}
	err = f.obj(dbusapi.RootPath).Call("org.freedesktop.DBus.Properties.Get", 0, dbusapi.ManagerIface, "Nope").Err
	if !errors.As(err, &de) || de.Name != "org.freedesktop.DBus.Error.UnknownProperty" {
		t.Errorf("Get Nope: %v", err)
	}
}

func TestDBus_5_PeerOnEveryObject(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	for _, p := range []dbus.ObjectPath{dbusapi.RootPath, dbusapi.PortPath("mlx5_bond_0", 1)} {
		if err := f.obj(p).Call("org.freedesktop.DBus.Peer.Ping", 0).Err; err != nil {
			t.Errorf("Ping %s: %v", p, err)
		}
		var id string
		if err := f.obj(p).Call("org.freedesktop.DBus.Peer.GetMachineId", 0).Store(&id); err != nil || len(id) != 32 {
			t.Errorf("GetMachineId %s = %q, %v", p, id, err)
		}
		if out, err := busctl(t, f, nobody, "call", dbusapi.BusName, string(p), "org.freedesktop.DBus.Peer", "Ping"); err != nil {
			t.Errorf("busctl Ping as nobody: %v %s", err, out)
		}
	}
}

// TestDBus_5_BusctlSeesTheAPI uses busctl as an independent client.
func TestDBus_5_BusctlSeesTheAPI(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	out, err := busctl(t, f, nil, "tree", "--list", dbusapi.BusName)
	if err != nil {
		t.Fatalf("busctl tree: %v %s", err, out)
	}
	for _, want := range []string{"/org/nichealth/NicHealth1\n", "/org/nichealth/NicHealth1/port/mlx5_5f0_1", "/org/nichealth/NicHealth1/port/mlx5_5fbond_5f0_1"} {
		if !strings.Contains(out, want) {
			t.Errorf("busctl tree lacks %q:\n%s", want, out)
		}
	}
	out, err = busctl(t, f, nobody, "introspect", dbusapi.BusName, string(dbusapi.RootPath))
	if err != nil {
		t.Fatalf("busctl introspect as nobody: %v %s", err, out)
	}
	for _, want := range []string{".AcknowledgeReset", "sus", ".HealthEvent", "tssubbss", ".FatalPorts", "emits-change", ".LastPollUSec", ".GetManagedObjects", ".ListEvents"} {
		if !strings.Contains(out, want) {
			t.Errorf("busctl introspect lacks %q:\n%s", want, out)
		}
	}
	out, err = busctl(t, f, nobody, "get-property", dbusapi.BusName, string(dbusapi.PortPath("mlx5_0", 1)), dbusapi.PortIface, "State", "Port", "NUMANode")
	if err != nil || out != "s \"ACTIVE\"\nu 1\ni 0\n" {
		t.Errorf("busctl get-property as nobody = %q, %v", out, err)
	}
	out, err = busctl(t, f, nobody, "get-property", dbusapi.BusName, string(dbusapi.PortPath("mlx5_0", 1)), dbusapi.PortIface, "Counters")
	if err != nil || !strings.Contains(out, `"link_downed"`) || !strings.Contains(out, `"Threshold" d 1`) {
		t.Errorf("busctl Counters = %q, %v", out, err)
	}
}

// TestDBus_5_PolicyDeniesMutationToOthers: the installed policy answers
// "Access denied" to an unprivileged caller, before the daemon sees it.
func TestDBus_5_PolicyDeniesMutationToOthers(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	for _, call := range [][]string{
		{"AcknowledgeReset", "sus", "mlx5_0", "1", ""},
		{"Reload"},
	} {
		out, err := busctl(t, f, nobody, append([]string{"call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface}, call...)...)
		if err == nil || !strings.Contains(out, "Access denied") {
			t.Errorf("%s as nobody: %v %s", call[0], err, out)
		}
	}
	out, err := busctl(t, f, nobody, "call", dbusapi.BusName, string(dbusapi.RootPath), "org.freedesktop.DBus.Properties", "Set", "ssv", dbusapi.ManagerIface, "Healthy", "b", "false")
	if err == nil || !strings.Contains(out, "Access denied") {
		t.Errorf("Set as nobody: %v %s", err, out)
	}
	if f.be.Reloads() != 0 || len(f.be.Acks()) != 0 {
		t.Error("a denied call reached the backend")
	}
}

// TestDBus_5_AdminGroupAllowed: a member of nichealth-admin passes both the
// policy and the daemon's own check.
func TestDBus_5_AdminGroupAllowed(t *testing.T) {
	admin := asAdmin(t)
	for _, permissive := range []bool{false, true} {
		t.Run(fmt.Sprintf("permissive=%v", permissive), func(t *testing.T) {
			opts := dbustest.Options{}
			if permissive {
				opts.ExtraPolicies = []string{dbustest.PermissivePolicy}
			}
			f := newFixture(t, opts, dbusapi.Options{})
			out, err := busctl(t, f, admin, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "Reload")
			if err != nil {
				t.Fatalf("Reload as %s: %v %s", adminUser, err, out)
			}
			// Not latched: the call got through both checks to the backend.
			out, err = busctl(t, f, admin, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "AcknowledgeReset", "sus", "mlx5_0", "1", "")
			if err == nil || !strings.Contains(out, "no latched breach") {
				t.Errorf("AcknowledgeReset as %s: %v %s", adminUser, err, out)
			}
			if f.be.Reloads() != 1 {
				t.Errorf("reloads = %d", f.be.Reloads())
			}
		})
	}
}

// TestDBus_5_DaemonDeniesWhenPolicyPermissive: with a policy that lets
// anybody call anything, the daemon's own uid/group check still refuses.
func TestDBus_5_DaemonDeniesWhenPolicyPermissive(t *testing.T) {
	f := newFixture(t, dbustest.Options{ExtraPolicies: []string{dbustest.PermissivePolicy}}, dbusapi.Options{})
	out, err := busctl(t, f, nobody, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "AcknowledgeReset", "sus", "mlx5_0", "1", "")
	if err == nil || !strings.Contains(out, "access denied: AcknowledgeReset needs root or membership in group nichealth-admin (try sudo)") {
		t.Errorf("AcknowledgeReset as nobody with a permissive policy: %v %s", err, out)
	}
	out, err = busctl(t, f, nobody, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "Reload")
	if err == nil || !strings.Contains(out, "access denied: Reload needs root") {
		t.Errorf("Reload as nobody with a permissive policy: %v %s", err, out)
	}
	if f.be.Reloads() != 0 || len(f.be.Acks()) != 0 {
		t.Error("a denied call reached the backend")
	}
}

func TestDBus_5_NameDeniedWithoutPolicy(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{NoPolicy: true})
	be := dbustest.NewBackend(dbustest.SampleManager(), nil)
	_, err := dbusapi.Serve(bus.Connect(t), be, dbusapi.Options{})
	if err == nil || !strings.Contains(err.Error(), "policy does not let this user own org.nichealth.NicHealth1") {
		t.Errorf("Serve without policy: %v", err)
	}
}

func TestDBus_5_NameTaken(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	_, err := dbusapi.Serve(f.bus.Connect(t), f.be, dbusapi.Options{})
	if err == nil || !strings.Contains(err.Error(), "already owned") {
		t.Errorf("second Serve: %v", err)
	}
	// The first server is untouched.
	if _, err := f.client.Manager(ctx(t)); err != nil {
		t.Errorf("first server after a refused second: %v", err)
	}
}

func TestDBus_5_ClientDaemonNotRunning(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	c := dbusapi.NewClient(bus.Connect(t), "")
	if _, err := c.Manager(ctx(t)); !errors.Is(err, dbusapi.ErrDaemonNotRunning) {
		t.Errorf("Manager without daemon: %v", err)
	}
	if _, err := dbusapi.Dial("unix:path=/nonexistent/socket"); !errors.Is(err, dbusapi.ErrBusUnreachable) {
		t.Errorf("Dial nowhere: %v", err)
	}
}

func TestDBus_5_CloseReleasesEverything(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Manager(ctx(t)); !errors.Is(err, dbusapi.ErrDaemonNotRunning) {
		t.Errorf("after Close: %v", err)
	}
	f.srv.Refresh()                       // no-op, no panic
	f.srv.Publish(sampleEvent(), 1)       // no-op, no panic
	if err := f.srv.Close(); err != nil { // idempotent
		t.Error(err)
	}
}

// TestDBus_5_ReadsDuringRefresh: 1,000 property reads complete while
// Refresh runs in a loop (no deadlock between readers and the refresher).
func TestDBus_5_ReadsDuringRefresh(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.be.Update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
				m.LastPollUSec++
				// A signalled change now and then, not every time:
				// the point is contention, not flooding the bus.
				(*ports)[0].Healthy = (i/100)%2 == 0
				(*ports)[0].Counters[0].Value = uint64(i)
			})
			f.srv.Refresh()
		}
	}()
	port := f.obj(dbusapi.PortPath("mlx5_0", 1))
	for i := 0; i < 1000; i++ {
		var all map[string]dbus.Variant
		o := port
		iface := dbusapi.PortIface
		if i%2 == 1 {
			o, iface = f.obj(dbusapi.RootPath), dbusapi.ManagerIface
		}
		if err := o.Call("org.freedesktop.DBus.Properties.GetAll", 0, iface).Store(&all); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}

func BenchmarkGetAllProperties(b *testing.B) {
	f := newFixture(b, dbustest.Options{}, dbusapi.Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.be.Update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
				m.LastPollUSec++
				(*ports)[0].Counters[0].Value = uint64(i)
			})
			f.srv.Refresh()
			// A real poll loop blocks on sysfs reads between refreshes;
			// without a yield this goroutine would hold its P for a whole
			// scheduler time slice and the benchmark would measure that.
			runtime.Gosched()
		}
	}()
	port := f.obj(dbusapi.PortPath("mlx5_0", 1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var all map[string]dbus.Variant
		if err := port.Call("org.freedesktop.DBus.Properties.GetAll", 0, dbusapi.PortIface).Store(&all); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
}

func BenchmarkRefreshUnchanged(b *testing.B) {
	f := newFixture(b, dbustest.Options{}, dbusapi.Options{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.srv.Refresh()
	}
}

func BenchmarkGetAllPropertiesIdle(b *testing.B) {
	f := newFixture(b, dbustest.Options{}, dbusapi.Options{})
	port := f.obj(dbusapi.PortPath("mlx5_0", 1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var all map[string]dbus.Variant
		if err := port.Call("org.freedesktop.DBus.Properties.GetAll", 0, dbusapi.PortIface).Store(&all); err != nil {
			b.Fatal(err)
		}
	}
}
