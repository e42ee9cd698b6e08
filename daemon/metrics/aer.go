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
	// RootPort: a root port's aer_rootport_total_err_* (what it received
	// from every device below it), not the function's own counters.
	RootPort bool
}

func aerTotals(src Source) []AERTotal {
	if a, ok := src.(AERSource); ok {
		return a.PCIeAER()
	}
	return nil
}

func fillAER(e *encoder, s *snapshot) {
	for _, t := range s.aer {
		f := mPCIeAERErrors
		if t.RootPort {
			f = mPCIeAERRootPort
		}
		e.add(f, e.labels("pci", t.PCI, "severity", t.Severity), uval(t.Total))
	}
}
