package metrics

import (
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// fillInventory writes the NIC functions of the PCI inventory and the
// fatal function conditions, which no port family can show (a function
// without an RDMA device has no port).
func fillInventory(e *encoder, s *snapshot) {
	for _, n := range s.health.Inventory {
		monitored := "false"
		if n.Monitored {
			monitored = "true"
		}
		e.add(mNICInfo, e.labels("pci", n.PCI, "device", n.Device, "role", n.Role, "hca_type", n.HCAType, "fw_ver", n.FWVer,
			"board_id", n.BoardID, "serial", n.Serial, "driver", n.Driver, "state", n.State, "monitored", monitored), uval(1))
	}
	for i := range s.health.Conditions {
		c := &s.health.Conditions[i]
		if c.Severity == health.Fatal && c.Entity.Kind == condition.PCI && (c.Kind == event.KindFunctionFailed || c.Kind == event.KindFunctionAbsent) {
			e.add(mNICFunctionFatal, e.labels("pci", c.Entity.PCI, "kind", string(c.Kind)), uval(1))
		}
	}
}
