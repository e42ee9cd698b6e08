package cable

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology/module"
)

func f(v float64) *float64 { return &v }

func hostErr(name string, rise uint64) Evidence {
	return Evidence{Kind: KindCounter, Side: Host, Name: name, Rise: rise, Window: 2 * time.Minute}
}

func peerErr(name string, rise uint64) Evidence {
	return Evidence{Kind: KindCounter, Side: Peer, Name: name, Rise: rise, Window: 2 * time.Minute}
}

func ib(host, peer []Evidence) Input {
	in := Input{Up: true}
	for _, e := range host {
		in.HostErrors[in.NHost] = e
		in.NHost++
	}
	for _, e := range peer {
		in.PeerErrors[in.NPeer] = e
		in.NPeer++
	}
	return in
}

// goodModule is a 4-lane optic inside its thresholds: Tx bias 6-8 mA
// (limits 2-15), Tx and Rx power 0.8-1 mW (limits 0.1-2.5, warnings
// 0.2-2).
func goodModule() *module.Module {
	m := &module.Module{Serial: "MT2245VS01234",
		Thresholds: module.Thresholds{
			TxBiasMA:  &module.Limits{HighAlarm: 15, HighWarning: 13, LowWarning: 3, LowAlarm: 2},
			TxPowerMW: &module.Limits{HighAlarm: 2.5, HighWarning: 2, LowWarning: 0.2, LowAlarm: 0.1},
			RxPowerMW: &module.Limits{HighAlarm: 2.5, HighWarning: 2, LowWarning: 0.2, LowAlarm: 0.1},
		}}
	for l := 1; l <= 4; l++ {
		m.Lanes = append(m.Lanes, module.Lane{Lane: l, TxBiasMA: f(7), TxPowerM: f(0.9), RxPowerM: f(0.9)})
	}
	return m
}

func roce(m *module.Module, host ...Evidence) Input {
	in := ib(host, nil)
	in.Ethernet, in.Module, in.ModuleUp = true, m, true
	return in
}

// readDown is in with its module read while the port was down.
func readDown(in Input) Input {
	in.ModuleUp = false
	return in
}

type ruleCase struct {
	name      string
	in        Input
	direction string
	suspect   string
	lane      int
	serial    string
	evidence  []string // substrings of EvidenceText, in order
}

func runRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v Verdict
			in := c.in
			Judge(&in, &v)
			if got := v.Direction.String(); got != c.direction {
				t.Errorf("direction %q, want %q (%s)", got, c.direction, v.EvidenceText())
			}
			if got := v.Suspect.String(); got != c.suspect {
				t.Errorf("suspect %q, want %q (%s)", got, c.suspect, v.EvidenceText())
			}
			if v.Lane != c.lane {
				t.Errorf("lane %d, want %d", v.Lane, c.lane)
			}
			if v.Serial != c.serial {
				t.Errorf("serial %q, want %q", v.Serial, c.serial)
			}
			text := v.EvidenceText()
			at := 0
			for _, want := range c.evidence {
				i := strings.Index(text[at:], want)
				if i < 0 {
					t.Errorf("evidence %q lacks %q (in order)", text, want)
					break
				}
				at += i + len(want)
			}
		})
	}
}

// TestCable_15_RuleOneEnd: a receiver counts what the other end sent, so
// errors at our port alone are the switch-to-host direction and at the
// switch port alone host-to-switch; one direction names no part.
func TestCable_15_RuleOneEnd(t *testing.T) {
	runRules(t, []ruleCase{
		{"our receiver only", ib([]Evidence{hostErr("symbol_error", 12)}, nil), "to-host", "unknown", 0, "",
			[]string{"host symbol_error +12 in 2m0s"}},
		{"switch receiver only", ib(nil, []Evidence{peerErr("SymbolErrorCounter", 55)}), "from-host", "unknown", 0, "",
			[]string{"switch SymbolErrorCounter +55 in 2m0s"}},
		{"link error recovery at ours", ib([]Evidence{hostErr("link_error_recovery", 3)}, nil), "to-host", "unknown", 0, "", nil},
		{"rcv errors at the switch", ib(nil, []Evidence{peerErr("PortRcvErrors", 1)}), "from-host", "unknown", 0, "", nil},
		{"clean port says nothing", ib(nil, nil), "none", "", 0, "", nil},
	})
}

// TestCable_15_RuleBothEnds: both receivers erring is the cable.
func TestCable_15_RuleBothEnds(t *testing.T) {
	runRules(t, []ruleCase{
		{"symbol errors both ways", ib([]Evidence{hostErr("symbol_error", 4)}, []Evidence{peerErr("SymbolErrorCounter", 9)}), "both", "cable", 0, "",
			[]string{"host symbol_error +4", "switch SymbolErrorCounter +9"}},
		{"different counters both ways", ib([]Evidence{hostErr("port_rcv_errors", 1)}, []Evidence{peerErr("LinkErrorRecoveryCounter", 1)}), "both", "cable", 0, "", nil},
	})
}

// TestCable_15_RuleRxPowerLowWithErrors: errors arriving while our module
// receives too little light: every lane low is the far transmitter, some
// lanes low that lane's fibre; low light without errors is no verdict.
func TestCable_15_RuleRxPowerLowWithErrors(t *testing.T) {
	oneLow := goodModule()
	oneLow.Lanes[1].RxPowerM = f(0.05) // below the 0.1 mW low alarm
	allLow := goodModule()
	for i := range allLow.Lanes {
		allLow.Lanes[i].RxPowerM = f(0.15) // below the 0.2 mW low warning only
	}
	unusedLow := goodModule()
	unusedLow.Lanes[3].RxPowerM, unusedLow.Lanes[3].Disabled = f(0), true
	runRules(t, []ruleCase{
		{"one lane low with PHY errors", roce(oneLow, hostErr("rx_symbol_err_phy", 40)), "to-host", "cable", 2, "",
			[]string{"lane 2 Rx power -13.01 dBm < -10.00 dBm", "host rx_symbol_err_phy +40"}},
		{"every lane low with PHY errors", roce(allLow, hostErr("rx_pcs_symbol_err_phy", 7)), "to-host", "peer-transceiver", 0, "",
			[]string{"lane 1 Rx power -8.24 dBm < -6.99 dBm"}},
		{"low light without errors", roce(oneLow), "none", "", 0, "", nil},
		{"errors with good light", roce(goodModule(), hostErr("rx_symbol_err_phy", 40)), "to-host", "unknown", 0, "", nil},
		{"a disabled lane's darkness is not low light", roce(unusedLow, hostErr("rx_symbol_err_phy", 40)), "to-host", "unknown", 0, "", nil},
	})
}

// TestCable_15_RuleHostTxOutOfThresholds: our laser's bias or output past
// our module's own thresholds is our transceiver, by serial.
func TestCable_15_RuleHostTxOutOfThresholds(t *testing.T) {
	biasHigh := goodModule()
	biasHigh.Lanes[2].TxBiasMA = f(14) // past the 13 mA high warning, not the 15 mA alarm
	powerLow := goodModule()
	powerLow.Lanes[0].TxPowerM = f(0.05)
	fault := goodModule()
	fault.Lanes[0].TxFault = true
	edge := goodModule()
	edge.Lanes[0].TxBiasMA = f(13) // at the warning: not past it
	runRules(t, []ruleCase{
		{"Tx bias high", roce(biasHigh), "from-host", "host-transceiver", 0, "MT2245VS01234", []string{"lane 3 Tx laser bias 14.00 mA > 13.00 mA"}},
		{"Tx power low alarm", roce(powerLow), "from-host", "host-transceiver", 0, "MT2245VS01234", []string{"lane 1 Tx power -13.01 dBm < -10.00 dBm"}},
		{"Tx fault", roce(fault), "from-host", "host-transceiver", 0, "MT2245VS01234", []string{"lane 1 Tx fault"}},
		{"at the threshold is inside", roce(edge), "none", "", 0, "", nil},
		{"our Tx failing and errors arriving", roce(biasHigh, hostErr("rx_symbol_err_phy", 2)), "both", "host-transceiver", 0, "MT2245VS01234", nil},
		{"read while the port was down: the high side still counts", readDown(roce(biasHigh)), "from-host", "host-transceiver", 0, "MT2245VS01234", nil},
		{"read while the port was down: a dark laser does not", readDown(roce(powerLow)), "none", "", 0, "", nil},
	})
}

// TestCable_15_RuleLaneLOS: LOS or LOL on a lane of an ACTIVE port is that
// lane's fibre; on the Tx (host) side it is our port; on a port that is
// not up it says nothing.
func TestCable_15_RuleLaneLOS(t *testing.T) {
	los := goodModule()
	los.Lanes[2].RxLOS = true
	lol := goodModule()
	lol.Lanes[0].RxLOL = true
	txlos := goodModule()
	txlos.Lanes[1].TxLOS = true
	down := roce(los)
	down.Up = false
	runRules(t, []ruleCase{
		{"Rx LOS lane 3", roce(los), "to-host", "cable", 3, "", []string{"lane 3 Rx LOS"}},
		{"Rx LOL lane 1", roce(lol), "to-host", "cable", 1, "", []string{"lane 1 Rx LOL"}},
		{"Tx LOS is the host side", roce(txlos), "from-host", "host-port", 0, "", []string{"lane 2 Tx LOS"}},
		{"port not ACTIVE", down, "none", "", 0, "", nil},
		{"flag read while the port was down", readDown(roce(los)), "none", "", 0, "", nil},
	})
}

// TestCable_15_RuleLinkDownReason: the kernel's reason is taken as it
// says.
func TestCable_15_RuleLinkDownReason(t *testing.T) {
	down := func(reason, sub, words string) Input {
		return Input{Ethernet: true, LinkDownReason: reason, LinkDownSub: sub, LinkDownWords: words}
	}
	runRules(t, []ruleCase{
		{"cable unplugged", down("no_cable", "", "no cable"), "both", "cable", 0, "", []string{"link down: no cable"}},
		{"unsupported cable", down("cable_issue", "unsupported_cable", "cable issue: unsupported cable"), "both", "cable", 0, "", nil},
		{"module not present or not ready", down("module", "cmis_not_ready", "transceiver module problem"), "both", "host-transceiver", 0, "", nil},
		{"module overheated", down("overheat", "", "the module overheated"), "both", "host-transceiver", 0, "", nil},
		{"high BER", down("bad_signal_integrity", "large_number_of_physical_errors", "bad signal integrity: large number of physical errors"), "both", "cable", 0, "", nil},
		{"SerDes clock lost", down("bad_signal_integrity", "serdes_reference_clock_lost", "x"), "both", "host-port", 0, "", nil},
		{"autoneg names no part", down("autoneg", "no_partner_detected", "auto-negotiation failed"), "both", "unknown", 0, "", nil},
		{"down without a reason says nothing", down("", "", ""), "none", "", 0, "", nil},
	})
}

// TestCable_15_RuleMissingFarEnd: an InfiniBand port whose switch port
// is not read says which half is missing instead of guessing both.
func TestCable_15_RuleMissingFarEnd(t *testing.T) {
	for _, c := range []struct {
		m    Missing
		why  string
		want string
	}{
		{FarEndOff, "", "switch port not read (the far end is off"},
		{FarEndUnavailable, "no umad device under /dev/infiniband", "switch port not read: no umad device under /dev/infiniband"},
		{PeerNotFound, "timeout", "switch port not found: timeout"},
		{PeerNotRead, "", "switch port not read yet"},
	} {
		in := ib([]Evidence{hostErr("symbol_error", 3)}, nil)
		in.Missing, in.MissingWhy = c.m, c.why
		var v Verdict
		Judge(&in, &v)
		if v.Direction != ToHost || v.Suspect != Unknown {
			t.Errorf("%v: %v/%v, want to-host/unknown (our half alone)", c.m, v.Direction, v.Suspect)
		}
		if !strings.Contains(v.EvidenceText(), c.want) {
			t.Errorf("%v: evidence %q lacks %q", c.m, v.EvidenceText(), c.want)
		}
		// RoCE has no far end: nothing is missing.
		in.Ethernet = true
		Judge(&in, &v)
		if v.Missing != Complete {
			t.Errorf("RoCE port reports a missing far end: %v", v.Missing)
		}
	}
}

// TestCable_15_JudgeAllocatesNothing: the verdict is computed every cycle
// and the poll cycle allocates nothing.
func TestCable_15_JudgeAllocatesNothing(t *testing.T) {
	m := goodModule()
	m.Lanes[1].RxPowerM = f(0.05)
	m.Lanes[2].TxBiasMA = f(14)
	in := roce(m, hostErr("rx_symbol_err_phy", 1))
	var v Verdict
	if a := testing.AllocsPerRun(100, func() { Judge(&in, &v) }); a != 0 {
		t.Fatalf("Judge allocates %.0f objects", a)
	}
}
