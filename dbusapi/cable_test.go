package dbusapi_test

import (
	"slices"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
)

// TestDBus_15_CableVerdictProperties: a port's cable verdict is on the
// bus as CableDirection and CableSuspect (signalled when they move),
// CablePart and CableEvidence, introspected with their types, and read
// back by the client nichealthctl uses.
func TestDBus_15_CableVerdictProperties(t *testing.T) {
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
	for name, sig := range map[string]string{"CableDirection": "s", "CableSuspect": "s", "CablePart": "s", "CableEvidence": "as"} {
		if types[name] != sig {
			t.Errorf("introspection: %s is %q, want %q", name, types[name], sig)
		}
	}
	ch := f.subscribe(t, dbus.WithMatchSender(dbusapi.BusName), dbus.WithMatchInterface("org.freedesktop.DBus.Properties"), dbus.WithMatchMember("PropertiesChanged"))
	evidence := []string{"host symbol_error +12 in 2m0s", "switch SymbolErrorCounter +55 in 2m0s"}
	f.be.Update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.CableDirection, p.CableSuspect, p.CablePart, p.CableEvidence = "both", "cable", "cable", evidence
	})
	f.srv.Refresh()
	s := dbustest.WaitSignal(t, ch, func(s *dbus.Signal) bool { return s.Path == path })
	changed := s.Body[1].(map[string]dbus.Variant)
	if changed["CableDirection"].Value() != "both" || changed["CableSuspect"].Value() != "cable" {
		t.Fatalf("PropertiesChanged %v lacks the verdict", changed)
	}
	if _, ok := changed["CableEvidence"]; ok {
		t.Error("CableEvidence is signalled: its rises move every tick")
	}
	var got dbus.Variant
	if err := f.obj(path).Call("org.freedesktop.DBus.Properties.Get", 0, dbusapi.PortIface, "CableSuspect").Store(&got); err != nil || got.Value() != "cable" {
		t.Fatalf("Get CableSuspect = %v, %v", got, err)
	}
	pv, err := f.client.Port(ctx(t), "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pv.CableDirection != "both" || pv.CableSuspect != "cable" || pv.CablePart != "cable" || !slices.Equal(pv.CableEvidence, evidence) {
		t.Fatalf("client read %q %q %q %v", pv.CableDirection, pv.CableSuspect, pv.CablePart, pv.CableEvidence)
	}
}

// TestDBus_15_CableVerdictFromSnapshot: the port object shows the
// snapshot's verdict as the daemon judged it, the missing half of the
// evidence last.
func TestDBus_15_CableVerdictFromSnapshot(t *testing.T) {
	p := health.Port{PortInfo: health.PortInfo{Device: "mlx5_0", Port: 1, Cable: health.Cable{Direction: "to-host", Suspect: "unknown",
		Part: "unknown part", Evidence: []string{"host symbol_error +3 in 2m0s"}, Missing: "switch port not read yet"}}}
	pv := dbusapi.PortViewOf(&p)
	if pv.CableDirection != "to-host" || pv.CableSuspect != "unknown" || pv.CablePart != "unknown part" ||
		!slices.Equal(pv.CableEvidence, []string{"host symbol_error +3 in 2m0s", "switch port not read yet"}) {
		t.Fatalf("view %q %q %q %v", pv.CableDirection, pv.CableSuspect, pv.CablePart, pv.CableEvidence)
	}
	if pv := dbusapi.PortViewOf(&health.Port{}); pv.CableEvidence == nil {
		t.Error("no evidence is nil on the bus (as)")
	}
}
