package kernellog

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// raise returns the condition's unhealthy event and records that it was
// reported. Its error code is the pattern's name, on the raise and on the
// clear alike (DESIGN.md difference 13).
func (c *Check) raise(a *Active, p *patterntable.Pattern, now time.Time) event.Spec {
	a.Reported, a.ReportedCount = now, a.Count
	action := p.Action
	s := c.base(a, event.KindKernelLog)
	s.IsFatal, s.Action = a.Fatal, &action
	s.Metadata["severity"] = string(p.Severity)
	s.Metadata["record"] = a.Record
	s.Message = fmt.Sprintf("Kernel log on %s: %s, %s since %s: %q — %s", where(a), a.Pattern, records(a.Count),
		a.First.UTC().Format(time.RFC3339), a.Record, p.Description)
	return s
}

// clear removes the condition and returns its healthy event.
func (c *Check) clear(mem *Memory, key string, a *Active, why string) event.Spec {
	delete(mem.Active, key)
	s := c.base(a, event.KindKernelLogCleared)
	s.IsHealthy = true
	s.Metadata["why"] = why
	s.Message = fmt.Sprintf("Kernel log on %s: %s condition cleared: %s (%s since %s)", where(a), a.Pattern, why,
		records(a.Count), a.First.UTC().Format(time.RFC3339))
	return s
}

// base is what a condition's raise and clear share: the check, the
// entities (the NIC's ports; a function without an RDMA device by its PCI
// address; otherwise the pattern), the error code and the metadata that
// identify it.
func (c *Check) base(a *Active, kind event.Kind) event.Spec {
	s := event.Spec{Kind: kind, CheckName: CheckName, ErrorCode: []string{a.Pattern},
		Metadata: map[string]string{
			"pattern": a.Pattern, "count": strconv.FormatUint(a.Count, 10), "seq": strconv.FormatUint(a.Seq, 10),
			"first": a.First.UTC().Format(time.RFC3339Nano), "last": a.Last.UTC().Format(time.RFC3339Nano),
		},
		Condition: condition.OfKernelLog(a.PCI, a.Pattern)}
	if a.PCI != "" {
		s.Metadata["pci"] = a.PCI
	}
	if a.Device != "" {
		s.Metadata["nic"] = a.Device
	}
	switch {
	case len(a.Ports) > 0:
		s.Ports = append(s.Ports, a.Ports...)
	case a.PCI != "":
		s.Entities = []event.Entity{{Type: event.EntityPCI, Value: a.PCI}}
	default:
		s.Entities = []event.Entity{{Type: event.EntityKernelLog, Value: a.Pattern}}
	}
	return s
}

func where(a *Active) string {
	switch {
	case a.Device != "":
		return fmt.Sprintf("%s (%s)", a.Device, a.PCI)
	case a.PCI != "":
		return "PCI function " + a.PCI + " (no monitored RDMA device)"
	}
	return "the node"
}

func records(n uint64) string {
	if n == 1 {
		return "1 record"
	}
	return strconv.FormatUint(n, 10) + " records"
}
