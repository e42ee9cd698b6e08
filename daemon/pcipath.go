package daemon

import (
	"strings"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/sanity"
)

// reportPCIePath raises each slow hop of the NICs' PCIe paths once, as one
// event per hop whose NIC and NICPort entities are every port below it
// (so each of those ports shows the condition), and clears the hops whose
// link trained back. The hop and the finding kind key the condition
// (metadata "pciHop", errorCode [kind]); the clear repeats the raise's
// check and NICs so every consumer can match the two.
func (m *Monitor) reportPCIePath(findings []sanity.Finding, specs *[]event.Spec, changed *bool) {
	seen := make(map[string]bool, len(findings))
	for _, f := range findings {
		key := f.Kind + "|" + f.PCI
		seen[key] = true
		if _, reported := m.mem.Sanity.Hops[key]; reported {
			continue
		}
		check := checks.DegradationCheckFor(m.linkLayerOfDevice(f.Device))
		m.mem.Sanity.Hops[key] = sanity.HopReport{Check: check, Message: f.Message, NICs: append([]string(nil), f.Below...)}
		*changed = true
		md := make(map[string]string, len(f.Metadata)+1)
		for k, v := range f.Metadata {
			md[k] = v
		}
		md["finding"] = f.Kind
		*specs = append(*specs, event.Spec{
			Kind: event.KindLinkSanity, CheckName: check, IsFatal: m.cfg.Sanity.Fatal, Message: f.Message,
			ErrorCode: []string{f.Kind, hopCode(f.Kind, f.PCI)}, Ports: m.portsOfNICs(f.Below), Metadata: md,
		})
	}
	for key, r := range m.mem.Sanity.Hops {
		if seen[key] {
			continue
		}
		delete(m.mem.Sanity.Hops, key)
		*changed = true
		kind, addr, _ := strings.Cut(key, "|")
		*specs = append(*specs, event.Spec{
			Kind: event.KindLinkSanityOK, CheckName: r.Check, IsHealthy: true, ErrorCode: []string{hopCode(kind, addr)},
			Ports: m.portsOfNICs(r.NICs), Message: "Resolved: " + r.Message,
			Metadata: map[string]string{"pciHop": addr, "nics": strings.Join(r.NICs, ","), "finding": kind},
		})
	}
}

// hopCode is the error code of one hop's finding, which its raise carries
// besides the kind and its clear alone: two slow hops of one kind above the
// same NICs name the same ports, and a clear by entity and error code
// (NVSentinel, DESIGN.md difference 13) must remove only its own.
func hopCode(kind, pci string) string { return kind + "@" + pci }

// portsOfNICs lists the monitored ports of the named NICs, in their order.
func (m *Monitor) portsOfNICs(nics []string) []event.PortRef {
	var out []event.PortRef
	for _, n := range nics {
		for _, p := range m.ports {
			if p.dev.Name == n {
				out = append(out, event.PortRef{Device: p.dev.Name, Port: p.port.Num})
			}
		}
	}
	return out
}
