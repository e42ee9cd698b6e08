package metrics

// AERSource is a Source that also knows the PCIe AER counts the daemon
// remembers (checks/aer). It is optional so that a Source without AER
// serves every other family unchanged.
type AERSource interface {
	PCIeAER() []AERTotal
}

// AERTotal is one PCI function's total of one AER class.
type AERTotal struct {
	PCI      string
	Severity string // correctable, nonfatal, fatal
	Total    uint64
}

func aerTotals(src Source) []AERTotal {
	if a, ok := src.(AERSource); ok {
		return a.PCIeAER()
	}
	return nil
}

func fillAER(e *encoder, s *snapshot) {
	for _, t := range s.aer {
		e.add(mPCIeAERErrors, e.labels("pci", t.PCI, "severity", t.Severity), uval(t.Total))
	}
}
