package metrics

func fillAER(e *encoder, s *snapshot) {
	for _, t := range s.health.AER {
		f := mPCIeAERErrors
		if t.RootPort {
			f = mPCIeAERRootPort
		}
		e.add(f, e.labels("pci", t.PCI, "severity", t.Severity), uval(t.Total))
	}
}
