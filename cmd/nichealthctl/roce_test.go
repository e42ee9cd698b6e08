package main

import (
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// DESIGN.md section 16 in nichealthctl port: the RoCE port's classes with
// their evidence and the bandwidth its pauses cost, read from the bus; an
// InfiniBand port prints no RoCE rows.
func TestCtl_PortRoCEClasses(t *testing.T) {
	f := newFixture(t)
	out, errs, _ := ctl(t, f.bus, nil, "port", "mlx5_bond_0", "1")
	for _, want := range []string{"RoCE class: roce-congested (information: congestion control working)",
		"RoCE evidence: roce-congested: ECN marks and CNPs 4000.0/s", "Pause lost: 4.0 Gb/s (2.0% of the port rate)"} {
		if !strings.Contains(out, want) {
			t.Errorf("port output lacks %q:\n%s%s", want, out, errs)
		}
	}
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[2]
		p.RoCEClass = "roce-lossy,roce-pause-storm"
		p.RoCEEvidence = "roce-lossy: sequence errors and retransmissions 12.0/s (out_of_sequence 12.0/s); ECN marks and CNPs 0.0/s; rx_discards_phy 0.0/s; roce-pause-storm: 3 pause storm events (warning 3, error 0); priority 3 tx paused 40.0% of the window"
	})
	out, errs, _ = ctl(t, f.bus, nil, "port", "mlx5_bond_0", "1")
	for _, want := range []string{"RoCE class: roce-lossy, roce-pause-storm",
		"RoCE evidence: roce-lossy: sequence errors and retransmissions 12.0/s (out_of_sequence 12.0/s); ECN marks and CNPs 0.0/s; rx_discards_phy 0.0/s\n",
		"RoCE evidence: roce-pause-storm: 3 pause storm events (warning 3, error 0); priority 3 tx paused 40.0% of the window\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("port output lacks %q:\n%s%s", want, out, errs)
		}
	}
	out, _, _ = ctl(t, f.bus, nil, "port", "mlx5_0", "1")
	if strings.Contains(out, "RoCE") {
		t.Errorf("an InfiniBand port prints RoCE rows:\n%s", out)
	}
}
