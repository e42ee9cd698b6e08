package dbusapi_test

import (
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
)

// DESIGN.md section 16 on the bus: a RoCE port's classes, their evidence
// and the bandwidth pauses cost are port properties, introspected, read
// by busctl as nobody and by the client; roce-congested shows here though
// it is no condition.
func TestDBus_5_RoCEClassProperties(t *testing.T) {
	f := newFixture(t, dbustest.Options{}, dbusapi.Options{})
	path := string(dbusapi.PortPath("mlx5_bond_0", 1))
	out, err := busctl(t, f, nobody, "introspect", dbusapi.BusName, path, dbusapi.PortIface)
	if err != nil {
		t.Fatalf("busctl introspect: %v %s", err, out)
	}
	for _, want := range []string{".RoCEClass", ".RoCEEvidence", ".RoCEPauseLostGbps", ".RoCEPauseLostPercent"} {
		if !strings.Contains(out, want) {
			t.Errorf("introspection lacks %s:\n%s", want, out)
		}
	}
	out, err = busctl(t, f, nobody, "get-property", dbusapi.BusName, path, dbusapi.PortIface, "RoCEClass", "RoCEPauseLostGbps", "RoCEPauseLostPercent")
	if err != nil || out != "s \"roce-congested\"\nd 4\nd 2\n" {
		t.Errorf("busctl get-property = %q, %v", out, err)
	}
	out, err = busctl(t, f, nobody, "get-property", dbusapi.BusName, path, dbusapi.PortIface, "RoCEEvidence")
	if err != nil || !strings.Contains(out, "np_ecn_marked_roce_packets 2000.0/s") {
		t.Errorf("busctl RoCEEvidence = %q, %v", out, err)
	}
	out, err = busctl(t, f, nobody, "get-property", dbusapi.BusName, string(dbusapi.PortPath("mlx5_0", 1)), dbusapi.PortIface, "RoCEClass")
	if err != nil || out != "s \"\"\n" {
		t.Errorf("an InfiniBand port's RoCEClass = %q, %v; want empty", out, err)
	}
}

// The port view reads the snapshot's RoCE classes as they are: classes
// and evidence in order, nothing re-judged.
func TestDBus_5_RoCEViewFromSnapshot(t *testing.T) {
	p := &health.Port{PortInfo: health.PortInfo{Device: "mlx5_2", Port: 1, LinkLayer: "Ethernet",
		RoCE: &health.RoCE{Classes: []string{"roce-lossy", "roce-pause-storm"}, Evidence: []string{"loss 12.0/s", "3 pause storm events"},
			PauseLostGbps: 100, PauseLostPercent: 25, PausePriority: 3}}}
	pv := dbusapi.PortViewOf(p)
	if pv.RoCEClass != "roce-lossy,roce-pause-storm" || pv.RoCEEvidence != "roce-lossy: loss 12.0/s; roce-pause-storm: 3 pause storm events" ||
		pv.RoCEPauseLostGbps != 100 || pv.RoCEPauseLostPercent != 25 {
		t.Fatalf("view = %+v", pv)
	}
	if pv := dbusapi.PortViewOf(&health.Port{PortInfo: health.PortInfo{Device: "mlx5_0", Port: 1}}); pv.RoCEClass != "" || pv.RoCEEvidence != "" {
		t.Fatalf("a port without RoCE classes: %+v", pv)
	}
}
