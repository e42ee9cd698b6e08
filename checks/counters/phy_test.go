package counters

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

func phyDef(name string) *countertable.Definition {
	for _, d := range countertable.PHYDefaults() {
		if d.Name == name {
			return &d
		}
	}
	panic("no PHY default " + name)
}

func phyRig(t *testing.T, gbps float64) *rig {
	r := newRig(t)
	r.ll, r.rate = topology.LinkLayerEthernet, gbps
	return r
}

// The PHY rows' thresholds, pinned with the reason they are written next
// to: 1e-5 pre-FEC BER over a minute against RS-FEC's ~2.4e-4 cliff.
func TestPHY_DefaultRows(t *testing.T) {
	want := map[string]struct {
		typ, unit string
		threshold float64
		fatal     bool
	}{
		"rx_corrected_bits_phy": {countertable.TypeBER, countertable.UnitMinute, 1e-5, false},
		"rx_symbol_err_phy":     {countertable.TypeVelocity, countertable.UnitHour, 120, true},
		"rx_pcs_symbol_err_phy": {countertable.TypeVelocity, countertable.UnitMinute, 10, false},
		"link_down_events_phy":  {countertable.TypeDelta, "", 0, true},
	}
	rows := countertable.PHYDefaults()
	if len(rows) != len(want) {
		t.Fatalf("%d PHY rows, want %d", len(rows), len(want))
	}
	for _, d := range rows {
		w := want[d.Name]
		if d.ThresholdType != w.typ || d.VelocityUnit != w.unit || d.Threshold != w.threshold || d.IsFatal != w.fatal ||
			d.EthtoolStat() != d.Name || !d.Enabled {
			t.Errorf("%s = %+v; want %+v on ethtool:%s", d.Name, d, w, d.Name)
		}
		if d.AppliesTo(topology.LinkLayerInfiniBand) || !d.AppliesTo(topology.LinkLayerEthernet) {
			t.Errorf("%s must apply to Ethernet ports only", d.Name)
		}
	}
	if countertable.RSFECCorrectionLimit/countertable.DefaultBERThreshold < 10 {
		t.Fatal("the BER threshold keeps less than an order of magnitude of margin from the FEC cliff")
	}
	if err := countertable.Validate(countertable.TableDefaults()); err != nil {
		t.Fatal(err)
	}
}

// Pre-FEC BER = delta corrected bits / (port rate × elapsed), judged once
// the one-minute window is full, at 200 and 400 Gb/s.
func TestPHY_BERThreshold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gbps   float64
		bits   uint64 // corrected in the minute
		breach bool
		ber    string
	}{
		{"400G above", 400, 300_000_000, true, "1.25e-05"}, // 3e8 / 2.4e13 = 1.25e-5
		{"400G below", 400, 200_000_000, false, ""},        // 8.3e-6
		{"200G above", 200, 150_000_000, true, "1.25e-05"}, // 1.5e8 / 1.2e13
		{"200G below", 200, 100_000_000, false, ""},
		{"200G at threshold", 200, 120_000_000, false, ""}, // exactly 1e-5 is not above it
		{"rate unknown", 0, 300_000_000_000, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := phyRig(t, tc.gbps)
			d := phyDef("rx_corrected_bits_phy")
			base := uint64(5_000_000) // the link's baseline since it came up
			r.none(d, base)
			r.at(30*time.Second).none(d, base+tc.bits/2) // window not full: held
			if !tc.breach {
				r.at(time.Minute).none(d, base+tc.bits)
				if r.breached(d) {
					t.Fatal("breached")
				}
				return
			}
			sp := r.at(time.Minute).one(d, base+tc.bits)
			if sp.Kind != event.KindCounterBreach || sp.IsFatal || sp.CheckName != event.EthernetDegradationCheck {
				t.Fatalf("spec %+v", sp)
			}
			if !strings.Contains(sp.Message, "pre-FEC BER="+tc.ber) || sp.Metadata["ber"] != tc.ber ||
				sp.Metadata["thresholdType"] != countertable.TypeBER {
				t.Fatalf("message %q metadata %v; want BER %s", sp.Message, sp.Metadata, tc.ber)
			}
			// Latched: more corrected bits add nothing until a reset.
			r.at(2*time.Minute).none(d, base+3*tc.bits)
		})
	}
}

// Post-FEC uncorrectable errors: 120 an hour is the bar; above it fatal.
func TestPHY_PostFECErrors(t *testing.T) {
	d := phyDef("rx_symbol_err_phy")
	r := phyRig(t, 400)
	r.none(d, 0)
	r.at(time.Hour).none(d, 120)
	sp := r.at(2*time.Hour).one(d, 120+121)
	if !sp.IsFatal || sp.Kind != event.KindCounterBreach || event.New(sp, event.Stamp{NodeName: "n", Now: r.now}).RecommendedAction != event.ActionReplaceVM {
		t.Fatalf("spec %+v", sp)
	}
}

// A reset (driver reload, ethtool counters cleared by a reload of mlx5)
// recovers a latched PHY breach; a reboot baselines every PHY row.
func TestPHY_ResetAndReboot(t *testing.T) {
	d := phyDef("link_down_events_phy")
	r := phyRig(t, 400)
	r.none(d, 7)
	if sp := r.at(time.Second).one(d, 8); !sp.IsFatal {
		t.Fatalf("link_down_events_phy +1 not fatal: %+v", sp)
	}
	if sp := r.at(2*time.Second).one(d, 0); sp.Kind != event.KindCounterRecovered || !sp.IsHealthy {
		t.Fatalf("reset: %+v", sp)
	}
	b := phyRig(t, 400)
	b.reboot = true
	for _, d := range countertable.PHYDefaults() {
		// A fatal counter's baseline under the state check (DESIGN.md
		// difference 2), a non-fatal one's under the degradation check.
		check := "EthernetDegradationCheck"
		if d.Name == "link_down_events_phy" || d.Name == "rx_symbol_err_phy" {
			check = "EthernetStateCheck"
		}
		if sp := b.one(&d, 0); sp.Kind != event.KindCounterBaseline || !sp.IsHealthy || sp.CheckName != check {
			t.Fatalf("%s baseline %+v", d.Name, sp)
		}
	}
	if specs, _ := b.poll(d, 0); len(specs) != 0 {
		t.Fatalf("second reading after reboot: %+v", specs)
	}
}

func TestPHY_Validation(t *testing.T) {
	str := func(s string) *string { return &s }
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		o    countertable.Override
		want string // "" accepted
	}{
		{countertable.Override{Name: str("fec_bins"), Path: str("ethtool:rx_fec_corrected_blocks"), ThresholdType: str("delta"), Threshold: f(100)}, ""},
		{countertable.Override{Name: str("b"), Path: str("ethtool:"), ThresholdType: str("delta"), Threshold: f(1)}, "names no statistic"},
		{countertable.Override{Name: str("b"), Path: str("ethtool:{interface}:x"), ThresholdType: str("delta"), Threshold: f(1)}, "must not name an interface"},
		{countertable.Override{Name: str("b"), Path: str("ethtool:a/b"), ThresholdType: str("delta"), Threshold: f(1)}, "letters, digits"},
		{countertable.Override{Name: str("b"), Path: str("ethtool:" + strings.Repeat("x", 32)), ThresholdType: str("delta"), Threshold: f(1)}, "longer than 31"},
		{countertable.Override{Name: str("rx_corrected_bits_phy"), Threshold: f(2)}, "is not a bit error rate"},
		{countertable.Override{Name: str("b"), Path: str("ethtool:rx_corrected_bits_phy"), ThresholdType: str("ber"), Threshold: f(1e-6)}, "velocityUnit is required"},
		{countertable.Override{Name: str("b"), Path: str("ethtool:x"), ThresholdType: str("bler"), Threshold: f(1)}, "not one of delta, velocity, ber"},
	} {
		_, err := countertable.Merge(countertable.TableDefaults(), []countertable.Override{tc.o})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: rejected: %v", *tc.o.Path+*tc.o.Name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v; want %q", tc.o, err, tc.want)
		}
	}
	var ve *countertable.ValidationError
	_, err := countertable.Merge(countertable.TableDefaults(), []countertable.Override{{Name: str("b"), Path: str("ethtool:"), ThresholdType: str("delta"), Threshold: f(1)}})
	if !errors.As(err, &ve) || ve.Key != "path" {
		t.Fatalf("error %v does not name the path key", err)
	}
}

// A BER breach describes the link now, so it clears when a full window is
// back at or below the threshold; it stays while the rate stays high.
func TestPHY_BERClearsWhenCorrectionsStop(t *testing.T) {
	d := phyDef("rx_corrected_bits_phy")
	r := phyRig(t, 400)
	r.none(d, 0)
	r.at(time.Minute).one(d, 300_000_000) // 1.25e-5
	r.at(90*time.Second).none(d, 400_000_000)
	r.at(2*time.Minute).none(d, 600_000_000) // still 1.25e-5 over the minute
	if !r.breached(d) {
		t.Fatal("breach cleared while the BER stayed above the threshold")
	}
	sp := r.at(3*time.Minute).one(d, 600_000_000+1_000)
	if sp.Kind != event.KindCounterRecovered || !sp.IsHealthy || sp.CheckName != event.EthernetDegradationCheck ||
		sp.Metadata["reason"] != "below-threshold" || !strings.Contains(sp.Message, "pre-FEC BER=4.17e-11") {
		t.Fatalf("recovery %+v", sp)
	}
	if r.breached(d) {
		t.Fatal("still breached after the recovery")
	}
	// And it can breach again.
	r.at(4*time.Minute).one(d, 600_001_000+300_000_000)
}
