package health

import "slices"

// renamePorts renames a NIC in the ports that conditions name (a PCIe
// path hop's, a card's), so the renamed NIC's ports stay covered. The
// slice is copied: published snapshots share the old one.
func (m *Model) renamePorts(old, nw string) bool {
	changed := false
	for k, c := range m.conds {
		if !slices.ContainsFunc(c.Ports, func(p PortRef) bool { return p.Device == old }) {
			continue
		}
		ports := slices.Clone(c.Ports)
		for i := range ports {
			if ports[i].Device == old {
				ports[i].Device = nw
			}
		}
		c.Ports = ports
		m.conds[k] = c
		changed = true
	}
	return changed
}
