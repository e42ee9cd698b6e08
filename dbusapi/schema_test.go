package dbusapi

import (
	"encoding/xml"
	"errors"
	"fmt"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
)

// Every property's value, as it goes on the wire, must have the signature
// the introspection XML announces.
func TestDBus_5_PropertyTablesMatchSignatures(t *testing.T) {
	pv := PortView{Counters: []CounterView{{Name: "link_downed"}}}
	for _, d := range portProps() {
		if got := dbus.SignatureOf(wireValue(d.get(&pv))).String(); got != d.sig {
			t.Errorf("Port.%s: value has signature %s, table says %s", d.name, got, d.sig)
		}
	}
	var mv ManagerView
	for _, d := range managerProps() {
		if got := dbus.SignatureOf(wireValue(d.get(&mv))).String(); got != d.sig {
			t.Errorf("Manager.%s: value has signature %s, table says %s", d.name, got, d.sig)
		}
	}
}

func TestDBus_5_MethodArgsFromFunctions(t *testing.T) {
	good := methodDef{name: "M", in: []string{"a", "b"}, out: []string{"o"},
		fn: func(_ dbus.Sender, a string, b uint32) (dbus.ObjectPath, *dbus.Error) { return "", nil }}
	args, err := methodArgs(good)
	if err != nil {
		t.Fatal(err)
	}
	want := []introspect.Arg{{Name: "a", Type: "s", Direction: "in"}, {Name: "b", Type: "u", Direction: "in"}, {Name: "o", Type: "o", Direction: "out"}}
	if fmt.Sprint(args) != fmt.Sprint(want) {
		t.Errorf("args = %v, want %v", args, want)
	}
	for _, bad := range []methodDef{
		{name: "NoErr", fn: func() string { return "" }},
		{name: "NotFunc", fn: 3},
		{name: "TooFewNames", in: []string{"a"}, fn: func(a, b string) *dbus.Error { return nil }},
		{name: "TooManyOut", out: []string{"x"}, fn: func() *dbus.Error { return nil }},
	} {
		if _, err := methodArgs(bad); err == nil {
			t.Errorf("%s: want an error", bad.name)
		}
	}
}

func TestDBus_5_IntrospectionXMLIsWellFormed(t *testing.T) {
	s := &Server{mgrDefs: managerProps(), prtDefs: portProps()}
	s.mgrMeta, s.prtMeta = metaOf(s.mgrDefs), metaOf(s.prtDefs)
	x, err := introspectXML(s.rootIfaces(), []string{"port"})
	if err != nil {
		t.Fatal(err)
	}
	var n introspect.Node
	if err := xml.Unmarshal([]byte(x), &n); err != nil {
		t.Fatalf("parse: %v\n%s", err, x)
	}
	if len(n.Children) != 1 || n.Children[0].Name != "port" {
		t.Errorf("children = %+v", n.Children)
	}
	names := map[string]bool{}
	for _, i := range n.Interfaces {
		names[i.Name] = true
	}
	for _, want := range []string{ManagerIface, objectManager, propertiesIf, introspectIf, peerIf} {
		if !names[want] {
			t.Errorf("root introspection lacks %s", want)
		}
	}
}

func TestDBus_5_ChangedOnlySignalledProperties(t *testing.T) {
	meta := []propMeta{{"A", "s", true}, {"B", "t", false}, {"C", "as", true}}
	old := []any{"x", uint64(1), []string{"a"}}
	if c := changed(meta, old, []any{"x", uint64(2), []string{"a"}}); c != nil {
		t.Errorf("only a non-signalled property moved, got %v", c)
	}
	c := changed(meta, old, []any{"y", uint64(1), []string{"a", "b"}})
	if len(c) != 2 || c["A"].Value() != "y" || c["C"].Signature().String() != "as" {
		t.Errorf("changed = %v", c)
	}
}

func TestDBus_5_EventRingBoundedSince(t *testing.T) {
	r := newRing(3)
	if got := r.since(0); len(got) != 0 {
		t.Fatalf("empty ring returned %v", got)
	}
	for i := uint64(1); i <= 5; i++ {
		r.add(EventRecord{Seq: i, JSON: fmt.Sprint(i)})
	}
	cases := []struct {
		since uint64
		want  []uint64
	}{{0, []uint64{3, 4, 5}}, {3, []uint64{4, 5}}, {5, nil}, {99, nil}}
	for _, c := range cases {
		var got []uint64
		for _, rec := range r.since(c.since) {
			got = append(got, rec.Seq)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("since(%d) = %v, want %v", c.since, got, c.want)
		}
	}
	z := newRing(0)
	z.add(EventRecord{Seq: 1})
	if len(z.since(0)) != 0 {
		t.Error("zero-size ring kept an event")
	}
}

func TestDBus_5_AccessRule(t *testing.T) {
	cases := []struct {
		name   string
		c      credentials
		gid    uint32
		exists bool
		want   bool
	}{
		{"root", credentials{uid: 0}, 0, false, true},
		{"member", credentials{uid: 1000, gids: []uint32{100, 990}}, 990, true, true},
		{"not member", credentials{uid: 1000, gids: []uint32{100}}, 990, true, false},
		{"no groups known", credentials{uid: 1000}, 990, true, false},
		{"group missing", credentials{uid: 1000, gids: []uint32{0}}, 0, false, false},
		{"nobody", credentials{uid: 65534, gids: []uint32{65534}}, 990, true, false},
	}
	for _, c := range cases {
		if got := allowed(c.c, c.gid, c.exists); got != c.want {
			t.Errorf("%s: allowed = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDBus_5_ErrorMapping(t *testing.T) {
	cases := []struct {
		err  error
		name string
	}{
		{fmt.Errorf("x: %w", ErrNoSuchPort), ErrNameNoSuchPort},
		{fmt.Errorf("x: %w", ErrNotLatched), ErrNameNotLatched},
		{fmt.Errorf("x: %w", ErrInvalidArgument), ErrNameInvalidArgument},
		{fmt.Errorf("x: %w", ErrAccessDenied), ErrNameAccessDenied},
		{errors.New("bad key"), errFailed},
	}
	c := &Client{}
	for _, tc := range cases {
		de := toDBusError(tc.err, errFailed)
		if de.Name != tc.name || de.Error() != tc.err.Error() {
			t.Errorf("%v -> %s %q", tc.err, de.Name, de.Error())
		}
		back := c.mapError(*de)
		if tc.name != errFailed && !errors.Is(back, errors.Unwrap(tc.err)) {
			t.Errorf("client mapping of %s lost the sentinel: %v", tc.name, back)
		}
	}
	if err := c.mapError(dbus.Error{Name: "org.freedesktop.DBus.Error.NameHasNoOwner", Body: []any{"x"}}); !errors.Is(err, ErrDaemonNotRunning) {
		t.Errorf("NameHasNoOwner -> %v", err)
	}
}

func TestDBus_5_NaturalOrder(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"mlx5_2", "mlx5_10", true}, {"mlx5_10", "mlx5_2", false}, {"mlx5_0", "mlx5_bond_0", true},
		{"a", "a", false}, {"a", "ab", true}, {"mlx5_02", "mlx5_2", false}, {"mlx5_2", "mlx5_02", true},
	}
	for _, c := range cases {
		if got := naturalLess(c.a, c.b); got != c.want {
			t.Errorf("naturalLess(%q,%q) = %v", c.a, c.b, got)
		}
	}
}

func TestDBus_5_DecodeToleratesMissingAndMistyped(t *testing.T) {
	p := decodePort(map[string]dbus.Variant{"Device": dbus.MakeVariant(uint32(3)), "Port": dbus.MakeVariant(uint32(2))})
	if p.Device != "" || p.Port != 2 || p.Counters == nil || p.Sanity == nil {
		t.Errorf("decodePort = %+v", p)
	}
}
