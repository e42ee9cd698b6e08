package metrics

// fillKernelLog writes the kernel-log families, when the check is on.
func fillKernelLog(e *encoder, s *snapshot) {
	k := s.health.KernelLog
	if k == nil {
		return
	}
	none := e.labels()
	e.add(mKernelLogReading, none, bval(k.Reading))
	e.add(mKernelLogRecords, none, uval(k.Records))
	e.add(mKernelLogSequence, none, uval(k.Sequence))
	e.add(mKernelLogDropped, none, uval(k.Dropped))
	e.add(mKernelLogLost, none, uval(k.Lost))
	e.add(mKernelLogCarried, none, uval(uint64(k.Carried)))
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"facility", k.OtherFacility}, {"unmonitored", k.Unmonitored}, {"unattributed", k.Unattributed},
		{"overflow", k.Overflow}, {"over_budget", k.OverBudget}} {
		e.add(mKernelLogIgnored, e.labels("reason", r.reason), uval(r.n))
	}
	for _, m := range k.Matches {
		e.add(mKernelLogMatches, e.labels("pattern", m.Pattern, "device", m.Device), uval(m.Count))
	}
}
