package kernellog

import (
	"strings"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// Function is a monitored NIC function: its RDMA device and ports.
type Function struct {
	PCI    string
	Device string
	Ports  []event.PortRef
}

// Devices is what the check needs to know of the host to attribute a
// record: the daemon builds it from discovery.
type Devices struct {
	// Monitored are the monitored functions by PCI address (lower case).
	Monitored map[string]Function
	// Known are the PCI addresses discovery saw but does not monitor
	// (VFs, management and excluded NICs).
	Known map[string]bool
	// Names maps the netdev and RDMA device names of every function
	// discovery saw to its PCI address.
	Names map[string]string
}

// prefixPCI reads dev_printk's "<driver> <bus id>: " (netdev_printk adds
// the netdev before the colon) and returns the bus id when it is a PCI
// address.
func prefixPCI(s string) string {
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 || s[sp-1] == ':' {
		return ""
	}
	rest := s[sp+1:]
	end := strings.IndexByte(rest, ' ')
	if end < 0 {
		return ""
	}
	id := strings.TrimSuffix(rest[:end], ":")
	if a := strings.ToLower(id); topology.IsPCIAddress(a) {
		return a
	}
	return ""
}

// attribute finds the PCI function a matched record is about: the
// dictionary's DEVICE=+pci:ADDR, the driver's prefix, the pattern's "pci"
// or "dev" group, then a netdev or RDMA device name in the text. "" means
// the record names no function.
func (d *Devices) attribute(r *kmsg.Record, p *compiled, m []int) string {
	if a := strings.ToLower(r.PCIAddress()); topology.IsPCIAddress(a) {
		return a
	}
	if a := prefixPCI(r.Message); a != "" {
		return a
	}
	if p.pciGroup >= 0 && m != nil && m[2*p.pciGroup] >= 0 {
		if a := strings.ToLower(r.Message[m[2*p.pciGroup]:m[2*p.pciGroup+1]]); topology.IsPCIAddress(a) {
			return a
		}
	}
	if p.devGroup >= 0 && m != nil && m[2*p.devGroup] >= 0 {
		if a := d.Names[r.Message[m[2*p.devGroup]:m[2*p.devGroup+1]]]; a != "" {
			return a
		}
	}
	return d.nameInText(r.Message)
}

// nameInText looks for a known netdev or RDMA device name among the
// message's words.
func (d *Devices) nameInText(s string) string {
	if len(d.Names) == 0 {
		return ""
	}
	for _, w := range strings.FieldsFunc(s, func(c rune) bool {
		return c == ' ' || c == ':' || c == '(' || c == ')' || c == ',' || c == '[' || c == ']' || c == '\'' || c == '"' || c == '='
	}) {
		if a := d.Names[w]; a != "" {
			return a
		}
	}
	return ""
}
