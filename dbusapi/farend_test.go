package dbusapi_test

import (
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
)

// TestDBus_13_StaleFarEndFromSnapshot (DESIGN.md sections 9 and 13): a far
// end that stopped answering (Found false in the snapshot) keeps its peer
// and last counters on the bus, with the time of its last good read and
// the failed reads, as /metrics keeps its series.
func TestDBus_13_StaleFarEndFromSnapshot(t *testing.T) {
	read := time.Unix(1_700_000_000, 123_000)
	p := health.Port{PortInfo: health.PortInfo{Device: "mlx5_0", Port: 1, Peer: &health.Peer{GUID: "0xb83fd20300a01000", Port: 17, Name: "ibsw-leaf1",
		Found: false, ReadAt: read, ReadErrors: 5, Err: "confirm the peer: timeout after 1s",
		Counters: []health.PeerCounter{{Field: "SymbolErrorCounter", Value: 55}}}}}
	pv := dbusapi.PortViewOf(&p)
	if pv.PeerGUID != "0xb83fd20300a01000" || pv.PeerPort != 17 || pv.PeerName != "ibsw-leaf1" || pv.PeerCounters["SymbolErrorCounter"] != 55 {
		t.Fatalf("a silent far end vanished from the bus: %q %d %q %v", pv.PeerGUID, pv.PeerPort, pv.PeerName, pv.PeerCounters)
	}
	if pv.PeerReadUSec != 1_700_000_000_000_123 || pv.PeerReadErrors != 5 || pv.PeerReadError != "confirm the peer: timeout after 1s" {
		t.Fatalf("a silent far end's age: %d µs, %d errors, %q", pv.PeerReadUSec, pv.PeerReadErrors, pv.PeerReadError)
	}
	if pv := dbusapi.PortViewOf(&health.Port{PortInfo: health.PortInfo{Peer: &health.Peer{GUID: "0x1", Found: true}}}); pv.PeerReadUSec != 0 || pv.PeerReadError != "" {
		t.Fatalf("a far end never read has an age: %d %q", pv.PeerReadUSec, pv.PeerReadError)
	}
}

// TestDBus_13_StaleFarEndProperties: PeerReadUSec and PeerReadErrors (t,
// read, not signalled: they move every [farEnd] interval) and
// PeerReadError (s, signalled: the far end fell silent or answers again)
// are introspected with their types, answered by Get, and read back by
// the client nichealthctl uses, with the kept peer.
func TestDBus_13_StaleFarEndProperties(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	path := dbusapi.PortPath("mlx5_0", 1)
	n := parseIntrospection(t, f, path)
	types := map[string]string{}
	for _, i := range n.Interfaces {
		if i.Name == dbusapi.PortIface {
			for _, p := range i.Properties {
				types[p.Name] = p.Type
			}
		}
	}
	for name, sig := range map[string]string{"PeerReadUSec": "t", "PeerReadErrors": "t", "PeerReadError": "s", "PeerGUID": "s", "PeerCounters": "a{st}"} {
		if types[name] != sig {
			t.Errorf("introspection: %s is %q, want %q", name, types[name], sig)
		}
	}
	ch := f.subscribe(t, dbus.WithMatchSender(dbusapi.BusName), dbus.WithMatchInterface("org.freedesktop.DBus.Properties"), dbus.WithMatchMember("PropertiesChanged"))
	f.be.Update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.PeerGUID, p.PeerPort, p.PeerName = "0xb83fd20300a01000", 17, "ibsw-leaf1"
		p.PeerCounters = map[string]uint64{"SymbolErrorCounter": 55}
		p.PeerReadUSec, p.PeerReadErrors, p.PeerReadError = 1_700_000_000_000_123, 5, "confirm the peer: timeout after 1s"
	})
	f.srv.Refresh()
	s := dbustest.WaitSignal(t, ch, func(s *dbus.Signal) bool { return s.Path == path })
	changed := s.Body[1].(map[string]dbus.Variant)
	if changed["PeerReadError"].Value() != "confirm the peer: timeout after 1s" {
		t.Fatalf("PropertiesChanged %v lacks PeerReadError", changed)
	}
	for _, quiet := range []string{"PeerReadUSec", "PeerReadErrors"} {
		if _, ok := changed[quiet]; ok {
			t.Errorf("%s is signalled: it moves every [farEnd] interval", quiet)
		}
	}
	var got dbus.Variant
	if err := f.obj(path).Call("org.freedesktop.DBus.Properties.Get", 0, dbusapi.PortIface, "PeerReadUSec").Store(&got); err != nil || got.Value() != uint64(1_700_000_000_000_123) {
		t.Fatalf("Get PeerReadUSec = %v, %v", got, err)
	}
	pv, err := f.client.Port(ctx(t), "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pv.PeerGUID != "0xb83fd20300a01000" || pv.PeerCounters["SymbolErrorCounter"] != 55 ||
		pv.PeerReadUSec != 1_700_000_000_000_123 || pv.PeerReadErrors != 5 || pv.PeerReadError != "confirm the peer: timeout after 1s" {
		t.Fatalf("client read peer %q %v, read %d µs, %d errors, %q", pv.PeerGUID, pv.PeerCounters, pv.PeerReadUSec, pv.PeerReadErrors, pv.PeerReadError)
	}
}
