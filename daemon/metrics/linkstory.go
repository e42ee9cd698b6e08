package metrics

import "strconv"

// fillLinkStory writes the transceivers' readings per port and lane and the
// NIC functions' devlink health reporters and firmware activation.
func fillLinkStory(e *encoder, s *snapshot) {
	for _, m := range s.health.Modules {
		port := strconv.Itoa(m.Port)
		id := e.labels("device", m.Device, "port", port)
		e.add(mModuleInfo, e.labels("device", m.Device, "port", port, "netdev", m.NetDev, "type", m.Type, "vendor", m.Vendor,
			"part_number", m.PartNumber, "serial", m.Serial), uval(1))
		if m.TemperatureC != nil {
			e.add(mModuleTemperature, id, fval(*m.TemperatureC))
		}
		if m.VoltageV != nil {
			e.add(mModuleVoltage, id, fval(*m.VoltageV))
		}
		for _, l := range m.Lanes {
			lane := e.extend(id, "lane", strconv.Itoa(l.Lane))
			if l.TxBiasA != nil {
				e.add(mModuleTxBias, lane, fval(*l.TxBiasA))
			}
			if l.TxPowerW != nil {
				e.add(mModuleTxPower, lane, fval(*l.TxPowerW))
			}
			if l.RxPowerW != nil {
				e.add(mModuleRxPower, lane, fval(*l.RxPowerW))
			}
		}
	}
	for _, d := range s.health.Devlink {
		if d.Reporter == "" {
			pending := uint64(0)
			if d.Stored != "" && d.Stored != d.Running {
				pending = 1
			}
			e.add(mDevlinkActivationPending, e.labels("pci", d.PCI, "running", d.Running, "stored", d.Stored), uval(pending))
			continue
		}
		r := e.labels("pci", d.PCI, "reporter", d.Reporter)
		inError := uint64(0)
		if d.Error {
			inError = 1
		}
		e.add(mDevlinkReporterError, r, uval(inError))
		e.add(mDevlinkReporterErrors, r, uval(d.ErrorCount))
		e.add(mDevlinkReporterRecoveries, r, uval(d.RecoverCount))
	}
}
