package countertable

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology"
)

// TestCounters_10_2_DefaultTable pins every field of every default row; a
// change to the seed's table must be deliberate and show up here.
func TestCounters_10_2_DefaultTable(t *testing.T) {
	want := []Definition{
		{"link_downed", "counters/link_downed", true, true, "delta", 0, "", "Port Training State Machine failed - QP disconnect"},
		{"excessive_buffer_overrun_errors", "counters/excessive_buffer_overrun_errors", true, true, "delta", 0, "", "HCA internal buffer overflow - lossless contract violated"},
		{"local_link_integrity_errors", "counters/local_link_integrity_errors", true, true, "delta", 0, "", "Physical errors exceed LocalPhyErrors hardware cap"},
		{"rnr_nak_retry_err", "hw_counters/rnr_nak_retry_err", true, true, "delta", 0, "", "Receiver Not Ready NAK retry exhausted - connection severed"},
		{"symbol_error", "counters/symbol_error", true, false, "velocity", 10, "second", "PHY bit errors before FEC - physical layer degradation"},
		{"symbol_error_fatal", "counters/symbol_error", true, true, "velocity", 120, "hour", "Symbol errors exceed IBTA BER threshold (10E-12) - link outside spec"},
		{"link_error_recovery", "counters/link_error_recovery", true, false, "velocity", 5, "minute", "Link retraining events - micro-flapping"},
		{"port_rcv_errors", "counters/port_rcv_errors", true, false, "velocity", 10, "second", "Malformed packets received"},
		{"out_of_sequence", "hw_counters/out_of_sequence", true, false, "velocity", 100, "second", "Fabric routing issues - out of sequence packets"},
		{"local_ack_timeout_err", "hw_counters/local_ack_timeout_err", true, false, "velocity", 1, "second", "ACK timeout - potential fabric black hole"},
		{"port_xmit_discards", "counters/port_xmit_discards", true, false, "velocity", 100, "second", "TX discards due to congestion"},
		// DESIGN.md difference 14: a share of the port rate lost, not the
		// seed's latching 10000 ticks/sec.
		{"port_xmit_wait", "counters/port_xmit_wait", true, false, "congestion", 10, "minute", "TX wait ticks - congestion backpressure"},
		{"roce_slow_restart", "hw_counters/roce_slow_restart", true, false, "velocity", 10, "second", "Victim flow oscillation"},
		// DESIGN.md difference 1: not statistics/carrier_changes.
		{"carrier_changes", "/sys/class/net/{interface}/carrier_changes", true, false, "delta", 2, "", "Link instability - carrier state changes"},
	}
	got := Defaults()
	if len(got) != len(want) {
		t.Fatalf("Defaults() has %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if err := Validate(got); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	got[0].Name = "changed"
	if Defaults()[0].Name != "link_downed" {
		t.Fatal("Defaults returns shared storage")
	}
}

func TestCounters_10_4_Window(t *testing.T) {
	for _, tc := range []struct {
		typ, unit string
		want      time.Duration
	}{
		{TypeVelocity, UnitSecond, time.Second},
		{TypeVelocity, UnitMinute, time.Minute},
		{TypeVelocity, UnitHour, time.Hour},
		{TypeDelta, "", 0},
		{TypeDelta, UnitHour, 0},
	} {
		d := Definition{ThresholdType: tc.typ, VelocityUnit: tc.unit}
		if got := d.Window(); got != tc.want {
			t.Errorf("%s/%s: Window() = %v, want %v", tc.typ, tc.unit, got, tc.want)
		}
	}
}

func TestCounters_DESIGN1_CarrierChangesFile(t *testing.T) {
	netdefs := Defaults()[13]
	if !netdefs.IsNetdev() {
		t.Fatal("carrier_changes is not a netdev counter")
	}
	port := "/h/sys/class/infiniband/mlx5_0/ports/1"
	netClass := "/h/sys/class/net"
	if got, want := netdefs.File(port, netClass, "eth2"), "/h/sys/class/net/eth2/carrier_changes"; got != want {
		t.Errorf("File = %q, want %q", got, want)
	}
	if got := netdefs.File(port, netClass, ""); got != "" {
		t.Errorf("File without netdev = %q, want empty", got)
	}
	sym := Defaults()[4]
	if sym.IsNetdev() {
		t.Error("symbol_error is not a netdev counter")
	}
	if got, want := sym.File(port, netClass, "eth2"), filepath.Join(port, "counters/symbol_error"); got != want {
		t.Errorf("File = %q, want %q", got, want)
	}
	stats := Definition{Path: "/sys/class/net/{interface}/statistics/rx_crc_errors"}
	if got, want := stats.File(port, netClass, "ens1f0"), "/h/sys/class/net/ens1f0/statistics/rx_crc_errors"; got != want {
		t.Errorf("File = %q, want %q", got, want)
	}
}

// TestCounters_DESIGN_IPoIBCarrierNotIBHealth: netdev counters are judged on
// RoCE ports only; an IPoIB interface's admin toggles are not IB health.
func TestCounters_DESIGN_IPoIBCarrierNotIBHealth(t *testing.T) {
	cc := Defaults()[13]
	if cc.AppliesTo(topology.LinkLayerInfiniBand) || !cc.AppliesTo(topology.LinkLayerEthernet) {
		t.Error("carrier_changes must apply to Ethernet ports only")
	}
	ld := Defaults()[0]
	if !ld.AppliesTo(topology.LinkLayerInfiniBand) || !ld.AppliesTo(topology.LinkLayerEthernet) {
		t.Error("port counters apply to both link layers")
	}
}

func TestCounters_Fingerprint(t *testing.T) {
	base := Defaults()[4]
	same := base
	same.Description = "reworded"
	if base.Fingerprint() != same.Fingerprint() {
		t.Error("description must not change the fingerprint")
	}
	for name, mut := range map[string]func(*Definition){
		"path":      func(d *Definition) { d.Path = "counters/other" },
		"type":      func(d *Definition) { d.ThresholdType = TypeDelta },
		"threshold": func(d *Definition) { d.Threshold = 11 },
		"unit":      func(d *Definition) { d.VelocityUnit = UnitMinute },
		"fatal":     func(d *Definition) { d.IsFatal = true },
	} {
		d := base
		mut(&d)
		if d.Fingerprint() == base.Fingerprint() {
			t.Errorf("changing %s must change the fingerprint", name)
		}
	}
}
