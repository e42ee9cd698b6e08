package health

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// TestPCIePath_HopConditionCoversEveryPortBelow: a PCIe path finding is one
// condition per (hop, kind), whatever NIC is named first, shown on every
// port its event names and no other; a second hop or kind is its own
// condition, and each clear removes only its own.
func TestPCIePath_HopConditionCoversEveryPortBelow(t *testing.T) {
	ports := []event.PortRef{{Device: "mlx5_0", Port: 1}, {Device: "mlx5_1", Port: 1}}
	hop := func(addr, kind string, healthy bool) *event.Event {
		k := event.KindLinkSanity
		if healthy {
			k = event.KindLinkSanityOK
		}
		return ev(event.Spec{Kind: k, CheckName: event.EthernetDegradationCheck, IsHealthy: healthy, Message: "slow " + addr,
			ErrorCode: []string{kind}, Ports: ports, Metadata: map[string]string{"pciHop": addr}})
	}
	m := NewModel()
	m.Apply(hop("0000:17:00.0", "pcie-path-width", false))
	m.Apply(hop("0000:14:00.0", "pcie-path-width", false))
	m.Apply(hop("0000:17:00.0", "pcie-path-speed", false))
	// The NIC's own finding of the same NIC is a different condition.
	m.Apply(ev(event.Spec{Kind: event.KindLinkSanity, CheckName: event.EthernetDegradationCheck, ErrorCode: []string{"pcie-width"}, Device: "mlx5_0"}))
	if m.Len() != 4 {
		t.Fatalf("conditions %+v", m.Conditions())
	}
	k, _ := event.KeyOf(hop("0000:17:00.0", "pcie-path-width", false))
	e := k.Entity
	if e.String() != "PCI 0000:17:00.0 pcie-path-width" || e.Kind != condition.PCI || e.Device != "" {
		t.Fatalf("entity %+v %q", e, e.String())
	}
	s := Build(Node{}, []PortInfo{{Device: "mlx5_0", Port: 1}, {Device: "mlx5_1", Port: 1}, {Device: "mlx5_3", Port: 1}}, m.Conditions())
	if n := len(s.Port("mlx5_1", 1).Conditions); n != 3 || s.Port("mlx5_1", 1).Verdict != NonFatal {
		t.Fatalf("mlx5_1 has %d conditions", n)
	}
	if n := len(s.Port("mlx5_0", 1).Conditions); n != 4 {
		t.Fatalf("mlx5_0 has %d conditions", n)
	}
	if s.Port("mlx5_3", 1).Verdict != Healthy {
		t.Fatal("a port below no slow hop is degraded")
	}
	if !m.Apply(hop("0000:17:00.0", "pcie-path-width", true)) || m.Len() != 3 || m.Has(condition.Key{Check: event.EthernetDegradationCheck, Entity: e}) {
		t.Fatalf("after the clear %+v", m.Conditions())
	}
}

// TestPCIePath_RenamedNICStaysCovered: a NIC renamed under the same PCI
// address keeps the hop condition on its ports.
func TestPCIePath_RenamedNICStaysCovered(t *testing.T) {
	m := NewModel()
	m.Apply(ev(event.Spec{Kind: event.KindLinkSanity, CheckName: event.InfiniBandDegradationCheck, Message: "slow",
		ErrorCode: []string{"pcie-path-speed"}, Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}},
		Metadata: map[string]string{"pciHop": "0000:15:01.0"}}))
	before := m.Conditions()
	m.Apply(ev(event.Spec{Kind: event.KindDeviceReappeared, CheckName: event.InfiniBandStateCheck, IsHealthy: true,
		Device: "mlx5_0", Metadata: map[string]string{"newName": "ibp25s0"}}))
	s := Build(Node{}, []PortInfo{{Device: "ibp25s0", Port: 1}}, m.Conditions())
	if s.Port("ibp25s0", 1).Verdict != NonFatal {
		t.Fatalf("renamed NIC not covered: %+v", m.Conditions())
	}
	if before[0].Ports[0].Device != "mlx5_0" {
		t.Fatal("rename changed an earlier snapshot's ports")
	}
}
