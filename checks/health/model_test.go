package health

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

func ev(s event.Spec) *event.Event {
	e := event.New(s, event.Stamp{NodeName: "n", Now: time.Unix(1_700_000_000, 0)})
	return &e
}

// TestHealth_EveryRaiseHasItsClear walks each condition kind through raise
// and clear, and checks that a port's verdict is the worst condition on the
// port, its NIC or its card (DESIGN.md section 9).
func TestHealth_EveryRaiseHasItsClear(t *testing.T) {
	ports := []PortInfo{
		{Device: "mlx5_0", Port: 1, Card: "0000:3b:00", HealthyMessage: "ok0"},
		{Device: "mlx5_1", Port: 1, Card: "0000:3c:00", HealthyMessage: "ok1"},
	}
	ib, deg := event.InfiniBandStateCheck, event.InfiniBandDegradationCheck
	raised := map[event.Kind]bool{}
	defer func() {
		// A new kind that raises a condition must come with its clear,
		// and a case here proving it.
		for _, k := range event.Kinds {
			switch k {
			case event.KindPortRecovered, event.KindPortBaseline, event.KindCounterRecovered, event.KindCounterBaseline,
				event.KindCounterUnsaturated, event.KindDeviceReappeared, event.KindCardRecovered, event.KindCheckCleared,
				event.KindReadRecovered, event.KindLinkSanityOK, event.KindRuleCleared, event.KindReadResumed,
				event.KindPCIeAERRecovered, event.KindCheckResumed, event.KindCongestionCleared, event.KindSubnetManagerFound, event.KindFunctionOK, event.KindDriftOK, event.KindPortsOK,
				event.KindKernelLogCleared, event.KindPeerRecovered, event.KindPeerUnsaturated, event.KindFarEndRestored,
				event.KindTransceiverOK, event.KindFirmwareHealthOK, event.KindRoCECleared:
				continue
			}
			if !raised[k] {
				t.Errorf("event kind %s raises conditions but no case here clears one", k)
			}
		}
	}()
	for _, tc := range []struct {
		name         string
		raise, clear event.Spec
		verdict      Severity
		entity       condition.Kind
		// nodeOnly: the condition covers no port (a PCI function without
		// an RDMA device, the node's compute ports, a check disabled by a
		// panic): only the node's verdict shows it.
		nodeOnly bool
	}{
		{"port fatal",
			event.Spec{Kind: event.KindPortFatal, CheckName: ib, IsFatal: true, Device: "mlx5_0", Port: 1, Message: "down"},
			event.Spec{Kind: event.KindPortRecovered, CheckName: ib, IsHealthy: true, Device: "mlx5_0", Port: 1},
			Fatal, condition.Port, false},
		{"port non-fatal",
			event.Spec{Kind: event.KindPortNonFatal, CheckName: ib, Device: "mlx5_0", Port: 1, Message: "init"},
			event.Spec{Kind: event.KindPortRecovered, CheckName: ib, IsHealthy: true, Device: "mlx5_0", Port: 1},
			NonFatal, condition.Port, false},
		{"latched fatal counter, cleared by acknowledgement",
			event.Spec{Kind: event.KindCounterBreach, CheckName: deg, IsFatal: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"link_downed"}, Metadata: map[string]string{"counter": "link_downed"}},
			event.Spec{Kind: event.KindCounterRecovered, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"link_downed"}, Metadata: map[string]string{"counter": "link_downed"}},
			Fatal, condition.Counter, false},
		{"latched non-fatal counter, cleared by reboot",
			event.Spec{Kind: event.KindCounterBreach, CheckName: deg, Device: "mlx5_0", Port: 1, ErrorCode: []string{"symbol_error"}, Metadata: map[string]string{"counter": "symbol_error"}},
			event.Spec{Kind: event.KindCheckCleared, CheckName: deg, IsHealthy: true},
			NonFatal, condition.Counter, false},
		{"card anomaly",
			event.Spec{Kind: event.KindCardAnomaly, CheckName: ib, IsFatal: true, Card: "0000:3b:00", Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}},
			event.Spec{Kind: event.KindCardRecovered, CheckName: ib, IsHealthy: true, Card: "0000:3b:00", Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}},
			Fatal, condition.Card, false},
		{"disappeared NIC",
			event.Spec{Kind: event.KindDeviceDisappeared, CheckName: ib, IsFatal: true, Device: "mlx5_0"},
			event.Spec{Kind: event.KindDeviceReappeared, CheckName: ib, IsHealthy: true, Device: "mlx5_0"},
			Fatal, condition.NIC, false},
		{"stuck read",
			event.Spec{Kind: event.KindReadStuck, CheckName: deg, Device: "mlx5_0", Port: 1, Metadata: map[string]string{"file": "/s/state"}},
			event.Spec{Kind: event.KindReadRecovered, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1, Metadata: map[string]string{"file": "/s/state"}},
			NonFatal, condition.File, false},
		{"sanity finding",
			event.Spec{Kind: event.KindLinkSanity, CheckName: deg, Device: "mlx5_0", Port: 1, ErrorCode: []string{"sm-lid"}},
			event.Spec{Kind: event.KindLinkSanityOK, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"sm-lid"}},
			NonFatal, condition.Finding, false},
		{"PCIe AER on a function above the port",
			event.Spec{Kind: event.KindPCIeAER, CheckName: deg, IsFatal: true, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"pci": "0000:3a:00.0", "aer": "fatal"}},
			event.Spec{Kind: event.KindPCIeAERRecovered, CheckName: deg, IsHealthy: true, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"pci": "0000:3a:00.0", "aer": "fatal"}},
			Fatal, condition.PCI, false},
		{"parked file",
			event.Spec{Kind: event.KindReadParked, CheckName: deg, Device: "mlx5_0", Port: 1, ErrorCode: []string{"EACCES"}, Metadata: map[string]string{"file": "/s/counters/symbol_error", "errno": "EACCES"}},
			event.Spec{Kind: event.KindReadResumed, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1, Metadata: map[string]string{"file": "/s/counters/symbol_error"}},
			NonFatal, condition.File, false},
		{"slow PCIe hop above the port",
			event.Spec{Kind: event.KindLinkSanity, CheckName: deg, ErrorCode: []string{"pcie-path-width"}, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"pciHop": "0000:17:00.0"}},
			event.Spec{Kind: event.KindLinkSanityOK, CheckName: deg, IsHealthy: true, ErrorCode: []string{"pcie-path-width"}, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"pciHop": "0000:17:00.0"}},
			NonFatal, condition.PCI, false},
		{"saturated counter: visibility lost until it moves again",
			event.Spec{Kind: event.KindCounterSaturated, CheckName: deg, Device: "mlx5_0", Port: 1, ErrorCode: []string{"saturated:symbol_error"}, Metadata: map[string]string{"counter": "symbol_error"}},
			event.Spec{Kind: event.KindCounterUnsaturated, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"saturated:symbol_error"}, Metadata: map[string]string{"counter": "symbol_error"}},
			NonFatal, condition.Counter, false},
		{"congested port",
			event.Spec{Kind: event.KindCongestion, CheckName: deg, Device: "mlx5_0", Port: 1, ErrorCode: []string{"congestion"}},
			event.Spec{Kind: event.KindCongestionCleared, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"congestion"}},
			NonFatal, condition.Counter, false},
		{"roce class (DESIGN.md section 16): a non-fatal condition keyed by the class, cleared by it",
			event.Spec{Kind: event.KindRoCE, CheckName: event.EthernetDegradationCheck, Device: "mlx5_0", Port: 1, ErrorCode: []string{"roce-lossy"}},
			event.Spec{Kind: event.KindRoCECleared, CheckName: event.EthernetDegradationCheck, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"roce-lossy"}},
			NonFatal, condition.Counter, false},
		{"no subnet manager: a node condition over the group's ports",
			event.Spec{Kind: event.KindNoSubnetManager, CheckName: ib, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, ErrorCode: []string{"no-subnet-manager"}, Metadata: map[string]string{"role": "Compute"}},
			event.Spec{Kind: event.KindSubnetManagerFound, CheckName: ib, IsHealthy: true, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, ErrorCode: []string{"no-subnet-manager"}, Metadata: map[string]string{"role": "Compute"}},
			NonFatal, condition.Node, false},
		{"kernel log pattern on the port's NIC function",
			event.Spec{Kind: event.KindKernelLog, CheckName: "NICKernelLogCheck", IsFatal: true, ErrorCode: []string{"cmd_exec_timeout"}, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"pattern": "cmd_exec_timeout", "pci": "0000:3b:00.0"}},
			event.Spec{Kind: event.KindKernelLogCleared, CheckName: "NICKernelLogCheck", IsHealthy: true, ErrorCode: []string{"cmd_exec_timeout"}, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"pattern": "cmd_exec_timeout", "pci": "0000:3b:00.0"}},
			Fatal, condition.KernelLog, false},
		{"transceiver past its alarm threshold on the port",
			event.Spec{Kind: event.KindTransceiver, CheckName: event.TransceiverCheck, IsFatal: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"module:rxPower:lane3"}, Condition: condition.OfFinding("mlx5_0", 1, "module:rxPower:lane3")},
			event.Spec{Kind: event.KindTransceiverOK, CheckName: event.TransceiverCheck, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"module:rxPower:lane3"}, Condition: condition.OfFinding("mlx5_0", 1, "module:rxPower:lane3")},
			Fatal, condition.Finding, false},
		{"fw_fatal on the port's NIC function",
			event.Spec{Kind: event.KindFirmwareHealth, CheckName: event.FirmwareHealthCheck, IsFatal: true, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, ErrorCode: []string{"devlink:fw_fatal"}, Metadata: map[string]string{"pci": "0000:3b:00.0", "finding": "devlink:fw_fatal"}, Condition: condition.OfPCI("0000:3b:00.0", "devlink:fw_fatal")},
			event.Spec{Kind: event.KindFirmwareHealthOK, CheckName: event.FirmwareHealthCheck, IsHealthy: true, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, ErrorCode: []string{"devlink:fw_fatal"}, Metadata: map[string]string{"pci": "0000:3b:00.0", "finding": "devlink:fw_fatal"}, Condition: condition.OfPCI("0000:3b:00.0", "devlink:fw_fatal")},
			Fatal, condition.PCI, false},
		{"fleet rule on the port",
			event.Spec{Kind: event.KindRuleRaised, CheckName: "RepeatedNICLinkFlap", Device: "mlx5_0", Port: 1, Message: "flapping"},
			event.Spec{Kind: event.KindRuleCleared, CheckName: "RepeatedNICLinkFlap", IsHealthy: true, Device: "mlx5_0", Port: 1},
			NonFatal, condition.Port, false},
		{"check disabled by a panic, cleared when it runs again",
			event.Spec{Kind: event.KindCheckFailed, CheckName: deg, Check: deg, Metadata: map[string]string{"check": deg}, Message: "disabled"},
			event.Spec{Kind: event.KindCheckResumed, CheckName: deg, Check: deg, IsHealthy: true, Metadata: map[string]string{"check": deg}},
			NonFatal, condition.Check, true},
		{"unbound NIC function",
			event.Spec{Kind: event.KindFunctionFailed, CheckName: ib, IsFatal: true, Entities: []event.Entity{{Type: event.EntityPCI, Value: "0000:3d:00.0"}}, Metadata: map[string]string{"pci": "0000:3d:00.0", "fault": "unbound"}},
			event.Spec{Kind: event.KindFunctionOK, CheckName: ib, IsHealthy: true, Entities: []event.Entity{{Type: event.EntityPCI, Value: "0000:3d:00.0"}}, Metadata: map[string]string{"pci": "0000:3d:00.0"}},
			Fatal, condition.PCI, true},
		{"NIC function gone since the last boot, acknowledged",
			event.Spec{Kind: event.KindFunctionAbsent, CheckName: ib, IsFatal: true, Entities: []event.Entity{{Type: event.EntityPCI, Value: "0000:3d:00.0"}}, Metadata: map[string]string{"pci": "0000:3d:00.0", "fault": "absent"}},
			event.Spec{Kind: event.KindFunctionOK, CheckName: ib, IsHealthy: true, Entities: []event.Entity{{Type: event.EntityPCI, Value: "0000:3d:00.0"}}, Metadata: map[string]string{"pci": "0000:3d:00.0"}},
			Fatal, condition.PCI, true},
		{"firmware drift on the port's card",
			event.Spec{Kind: event.KindDrift, CheckName: ib, Card: "0000:3b:00", Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"drift": "fw_ver"}},
			event.Spec{Kind: event.KindDriftOK, CheckName: ib, IsHealthy: true, Card: "0000:3b:00", Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"drift": "fw_ver"}},
			NonFatal, condition.Card, false},
		{"far end of the port's cable counts errors",
			event.Spec{Kind: event.KindPeerBreach, CheckName: event.FarEndCheck, Device: "mlx5_0", Port: 1, ErrorCode: []string{"peer:symbol_error"}, Message: "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55]"},
			event.Spec{Kind: event.KindPeerRecovered, CheckName: event.FarEndCheck, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"peer:symbol_error"}},
			NonFatal, condition.Counter, false},
		{"far end's field saturated",
			event.Spec{Kind: event.KindPeerSaturated, CheckName: event.FarEndCheck, Device: "mlx5_0", Port: 1, ErrorCode: []string{"peer-saturated:LinkDownedCounter"}},
			event.Spec{Kind: event.KindPeerUnsaturated, CheckName: event.FarEndCheck, IsHealthy: true, Device: "mlx5_0", Port: 1, ErrorCode: []string{"peer-saturated:LinkDownedCounter"}},
			NonFatal, condition.Counter, false},
		{"far end unreadable: the MAD helper crashed",
			event.Spec{Kind: event.KindFarEndLost, CheckName: event.FarEndCheck, Check: "farEnd", ErrorCode: []string{"far-end-lost"}},
			event.Spec{Kind: event.KindFarEndRestored, CheckName: event.FarEndCheck, Check: "farEnd", IsHealthy: true, ErrorCode: []string{"far-end-lost"}},
			NonFatal, condition.Node, true},
		{"fewer compute ports than expected",
			event.Spec{Kind: event.KindPortsShort, CheckName: ib, IsFatal: true, Entities: []event.Entity{{Type: event.EntityNICGroup, Value: "compute"}}},
			event.Spec{Kind: event.KindPortsOK, CheckName: ib, IsHealthy: true, Entities: []event.Entity{{Type: event.EntityNICGroup, Value: "compute"}}},
			Fatal, condition.Node, true},
	} {
		raised[tc.raise.Kind] = true
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel()
			if !m.Apply(ev(tc.raise)) {
				t.Fatal("raise did not change the model")
			}
			cs := m.Conditions()
			if len(cs) != 1 || cs[0].Entity.Kind != tc.entity {
				t.Fatalf("conditions %+v, want one about a %s", cs, tc.entity)
			}
			s := Build(Node{}, ports, cs)
			portVerdict := tc.verdict
			if tc.nodeOnly {
				portVerdict = Healthy
				if fc := s.FailedChecks(); tc.entity == condition.Check && len(fc) != 1 {
					t.Errorf("FailedChecks %+v", fc)
				}
			}
			if got := s.Port("mlx5_0", 1).Verdict; got != portVerdict {
				t.Errorf("mlx5_0/1 verdict %v, want %v", got, portVerdict)
			}
			if got := s.Port("mlx5_1", 1).Verdict; got != Healthy {
				t.Errorf("mlx5_1/1 verdict %v, want healthy (not covered)", got)
			}
			if s.Verdict != tc.verdict || s.Healthy() {
				t.Errorf("node verdict %v", s.Verdict)
			}
			wantFatal, wantPorts := 0, 1
			if tc.verdict == Fatal {
				wantFatal = 1
			}
			if tc.nodeOnly {
				wantFatal, wantPorts = 0, 0
			}
			if len(s.FatalPorts) != wantFatal || len(s.FatalPorts)+len(s.DegradedPorts) != wantPorts {
				t.Errorf("fatal %v degraded %v", s.FatalPorts, s.DegradedPorts)
			}
			if !m.Apply(ev(tc.clear)) {
				t.Fatal("clear did not change the model")
			}
			s = Build(Node{}, ports, m.Conditions())
			if !s.Healthy() || s.Port("mlx5_0", 1).Message != "ok0" || len(s.FatalPorts)+len(s.DegradedPorts) != 0 {
				t.Errorf("after clear: %+v", s)
			}
		})
	}
}

func TestHealth_RegradeKeepsSinceAndCountsPortOnce(t *testing.T) {
	m := NewModel()
	ib := event.InfiniBandStateCheck
	first := ev(event.Spec{Kind: event.KindPortNonFatal, CheckName: ib, Device: "mlx5_0", Port: 1, Message: "init"})
	m.Apply(first)
	later := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: ib, IsFatal: true, Device: "mlx5_0", Port: 1, Message: "down"},
		event.Stamp{Now: time.Unix(1_700_000_100, 0)})
	m.Apply(&later)
	m.Apply(ev(event.Spec{Kind: event.KindCounterBreach, CheckName: event.InfiniBandDegradationCheck, Device: "mlx5_0", Port: 1,
		Metadata: map[string]string{"counter": "symbol_error"}}))
	cs := m.Conditions()
	if len(cs) != 2 || cs[0].Severity != Fatal || !cs[0].Since.Equal(first.GeneratedTimestamp) {
		t.Fatalf("conditions %+v", cs)
	}
	s := Build(Node{}, []PortInfo{{Device: "mlx5_0", Port: 1}}, cs)
	if len(s.FatalPorts) != 1 || len(s.DegradedPorts) != 0 || s.Port("mlx5_0", 1).Message != "down" {
		t.Errorf("snapshot %+v", s)
	}
	if got := s.Status(); got != "1 port on 1 NIC monitored; 1 fatal: down (and 1 more condition)" {
		t.Errorf("status %q", got)
	}
}

func TestHealth_RenameMovesConditions(t *testing.T) {
	m := NewModel()
	m.Apply(ev(event.Spec{Kind: event.KindCounterBreach, CheckName: event.InfiniBandDegradationCheck, IsFatal: true,
		Device: "mlx5_0", Port: 1, Metadata: map[string]string{"counter": "link_downed"}}))
	m.Apply(ev(event.Spec{Kind: event.KindDeviceReappeared, CheckName: event.InfiniBandStateCheck, IsHealthy: true,
		Device: "mlx5_0", Metadata: map[string]string{"newName": "ibp3s0"}}))
	cs := m.Conditions()
	if len(cs) != 1 || cs[0].Entity.Device != "ibp3s0" {
		t.Fatalf("conditions after rename %+v", cs)
	}
}

func TestHealth_SaturationIsNotACondition(t *testing.T) {
	m := NewModel()
	if m.Apply(ev(event.Spec{Kind: event.KindCounterSaturated, CheckName: event.InfiniBandDegradationCheck, Device: "mlx5_0", Port: 1,
		Metadata: map[string]string{"counter": "link_downed"}})) || m.Len() != 0 {
		t.Error("saturation raised a condition")
	}
}

func TestHealth_MissingPortListedAndCountedOnce(t *testing.T) {
	m := NewModel()
	m.Apply(ev(event.Spec{Kind: event.KindDeviceDisappeared, CheckName: event.InfiniBandStateCheck, IsFatal: true, Device: "mlx5_7", Message: "gone"}))
	s := Build(Node{}, []PortInfo{{Device: "mlx5_7", Port: 1, State: "MISSING", Missing: true}}, m.Conditions())
	if p := s.Port("mlx5_7", 1); p == nil || p.Verdict != Fatal || p.Message != "gone" {
		t.Fatalf("missing port %+v", p)
	}
	if len(s.FatalPorts) != 1 || s.FatalPorts[0] != "mlx5_7/1" {
		t.Errorf("FatalPorts %v", s.FatalPorts)
	}
}

func TestHealth_CompareDevicesNatural(t *testing.T) {
	if CompareDevices("mlx5_2", "mlx5_10") >= 0 || CompareDevices("mlx5_10", "mlx5_2") <= 0 || CompareDevices("a", "a") != 0 {
		t.Error("natural order broken")
	}
}

// A kernel-log condition that names no monitored NIC (a failed probe, a
// soft lockup) is the node's: it covers no port, yet the node is not
// healthy and STATUS= says so; its clear needs its own entity.
func TestHealth_NodeLevelKernelLogCondition(t *testing.T) {
	ports := []PortInfo{{Device: "mlx5_0", Port: 1, HealthyMessage: "ok0"}}
	m := NewModel()
	raise := event.Spec{Kind: event.KindKernelLog, CheckName: "NICKernelLogCheck", ErrorCode: []string{"napi_soft_lockup"},
		Entities: []event.Entity{{Type: event.EntityKernelLog, Value: "napi_soft_lockup"}}, Message: "soft lockup in mlx5e_napi_poll",
		Metadata: map[string]string{"pattern": "napi_soft_lockup"}}
	probe := event.Spec{Kind: event.KindKernelLog, CheckName: "NICKernelLogCheck", IsFatal: true, ErrorCode: []string{"probe_failed"},
		Entities: []event.Entity{{Type: event.EntityPCI, Value: "0000:41:00.0"}}, Message: "probe failed", Metadata: map[string]string{"pattern": "probe_failed", "pci": "0000:41:00.0"}}
	m.Apply(ev(raise))
	s := Build(Node{}, ports, m.Conditions())
	if s.Verdict != NonFatal || s.Port("mlx5_0", 1).Verdict != Healthy || len(s.DegradedPorts) != 0 {
		t.Fatalf("snapshot %+v", s)
	}
	if st := s.Status(); !strings.Contains(st, "0 degraded: soft lockup") {
		t.Fatalf("STATUS %q", st)
	}
	m.Apply(ev(probe))
	s = Build(Node{}, ports, m.Conditions())
	if s.Verdict != Fatal || len(s.FatalPorts) != 0 || !strings.Contains(s.Status(), "0 fatal: probe failed") {
		t.Fatalf("snapshot %+v status %q", s, s.Status())
	}
	if got := s.Conditions[0].Entity.String(); got != "PCI 0000:41:00.0 kernel log probe_failed" {
		t.Errorf("entity %q", got)
	}
	clr := raise
	clr.Kind, clr.IsHealthy = event.KindKernelLogCleared, true
	m.Apply(ev(clr))
	if m.Len() != 1 || m.Has(condition.Key{Check: "NICKernelLogCheck", Entity: condition.OfKernelLog("", "napi_soft_lockup")}) {
		t.Fatalf("after the clear: %+v", m.Conditions())
	}
}

// TestHealth_SaturationKeepsTheLatchedBreach: a counter's saturation is a
// condition of its own; it neither replaces nor clears the latched fatal
// breach of the same counter (DESIGN.md difference 14).
func TestHealth_SaturationKeepsTheLatchedBreach(t *testing.T) {
	deg := event.InfiniBandDegradationCheck
	m := NewModel()
	m.Apply(ev(event.Spec{Kind: event.KindCounterBreach, CheckName: deg, IsFatal: true, Device: "mlx5_0", Port: 1,
		ErrorCode: []string{"link_downed"}, Metadata: map[string]string{"counter": "link_downed"}}))
	m.Apply(ev(event.Spec{Kind: event.KindCounterSaturated, CheckName: deg, Device: "mlx5_0", Port: 1,
		ErrorCode: []string{"saturated:link_downed"}, Metadata: map[string]string{"counter": "link_downed"}}))
	if cs := m.Conditions(); len(cs) != 2 || cs[0].Severity != Fatal || cs[1].Severity != NonFatal {
		t.Fatalf("conditions %+v", cs)
	}
	m.Apply(ev(event.Spec{Kind: event.KindCounterUnsaturated, CheckName: deg, IsHealthy: true, Device: "mlx5_0", Port: 1,
		ErrorCode: []string{"saturated:link_downed"}, Metadata: map[string]string{"counter": "link_downed"}}))
	if cs := m.Conditions(); len(cs) != 1 || cs[0].Severity != Fatal {
		t.Fatalf("the unsaturation cleared the breach: %+v", cs)
	}
}
