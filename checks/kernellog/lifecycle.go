package kernellog

import (
	"fmt"
	"sort"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"
	"github.com/nichealth/nichealthd/event"
)

// activeEntry is one condition with its key.
type activeEntry struct {
	k string
	a *Active
}

// sortedActive lists the conditions in key order, so that the events of
// one pass come out in the same order every run; an entry restored as
// null from a damaged state file is skipped, never dereferenced.
func sortedActive(mem *Memory) []activeEntry {
	if len(mem.Active) == 0 {
		return nil
	}
	out := make([]activeEntry, 0, len(mem.Active))
	for k, a := range mem.Active {
		if a != nil {
			out = append(out, activeEntry{k, a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].k < out[j].k })
	return out
}

// Tick clears non-fatal conditions whose quiet period passed, reports a
// count that grew during the last de-duplication window, and forgets
// occurrences that fell out of their window without reaching the count.
func (c *Check) Tick(mem *Memory, now time.Time) (specs []event.Spec, changed bool) {
	for _, e := range sortedActive(mem) {
		k, a := e.k, e.a
		p := c.patternOf(a)
		if p == nil || !p.Enabled || p.Severity == patterntable.Informational {
			continue // Reconcile's
		}
		switch {
		case !a.Raised:
			if len(a.Recent) == 0 || now.Sub(a.Recent[len(a.Recent)-1]) >= p.Window {
				delete(mem.Active, k)
				changed = true
			}
		case !a.Fatal && now.Sub(a.Last) >= p.Quiet:
			specs = append(specs, c.clear(mem, k, a, "no new record for "+p.Quiet.String()))
			changed = true
		case a.Count > a.ReportedCount && now.Sub(a.Reported) >= p.Dedupe:
			specs = append(specs, c.raise(a, p, now))
			changed = true
		}
	}
	return specs, changed
}

// Reconcile settles the conditions after the table changed: a pattern
// removed, disabled or made informational clears its conditions; one
// whose severity changed is raised again with the new one.
func (c *Check) Reconcile(mem *Memory, now time.Time) []event.Spec {
	var specs []event.Spec
	for _, e := range sortedActive(mem) {
		k, a := e.k, e.a
		if a.Pattern == OverflowName {
			continue // no table row: it stays until acknowledged or quiet
		}
		p := c.table.byName[a.Pattern]
		why := ""
		switch {
		case p == nil:
			why = "pattern " + a.Pattern + " is no longer in the configuration"
		case !p.Enabled:
			why = "pattern " + a.Pattern + " was disabled (enabled = false)"
		case p.Severity == patterntable.Informational:
			why = "pattern " + a.Pattern + " is now informational"
		}
		switch {
		case why != "" && a.Raised:
			specs = append(specs, c.clear(mem, k, a, why))
		case why != "":
			delete(mem.Active, k)
		case p != nil && a.Raised && a.Fatal != (p.Severity == patterntable.Fatal): // p is nil only with a why
			a.Fatal = p.Severity == patterntable.Fatal
			specs = append(specs, c.raise(a, p.Pattern, now))
		}
	}
	return specs
}

// Unfold settles what a restored memory or the health model held past the
// bounds: each such condition is cleared (the health model drops it) and
// counted on the overflow condition, raised (or raised again) with them.
func (c *Check) Unfold(mem *Memory, now time.Time) []event.Spec {
	if len(mem.folded) == 0 {
		return nil
	}
	var specs []event.Spec
	o := mem.overflow(now)
	wasFatal, wasRaised := o.Fatal, o.Raised
	for _, f := range mem.folded {
		o.Count += max(f.a.Count, 1)
		o.Fatal = o.Fatal || f.a.Raised && f.a.Fatal
		if f.a.Last.After(o.Last) {
			o.Last = f.a.Last
		}
		if f.a.Raised {
			specs = append(specs, c.clear(mem, f.key, f.a, fmt.Sprintf("counted on the %s condition: the check keeps at most %d kernel-log conditions (%d per function, %d functions without a monitored RDMA device)",
				OverflowName, MaxConditions, MaxPerFunction, MaxOtherFunctions)))
		}
	}
	mem.folded = nil
	if !wasRaised || o.Fatal != wasFatal || o.Count > o.ReportedCount {
		o.Raised = true
		specs = append(specs, c.raise(o, overflowPattern(o), now))
	}
	return specs
}

// ClearAll clears every condition (the check was switched off).
func (c *Check) ClearAll(mem *Memory, why string) []event.Spec {
	var specs []event.Spec
	for _, e := range sortedActive(mem) {
		if k, a := e.k, e.a; a.Raised {
			specs = append(specs, c.clear(mem, k, a, why))
		} else {
			delete(mem.Active, k)
		}
	}
	return specs
}

// IsAckWord reports whether AcknowledgeReset's counter argument is the
// kernel log's: "kernel_log" or a pattern's name.
func (c *Check) IsAckWord(what string) bool {
	return what == patterntable.AckAll || what == OverflowName || c.table.byName[what] != nil
}

// Acknowledge clears, at the operator's word, the conditions covering a
// port: all of them for "kernel_log", or those of one pattern (by its
// name, which also clears that pattern's node-level conditions, since
// they cover no port to name).
func (c *Check) Acknowledge(mem *Memory, device string, port int, what, who string) []event.Spec {
	var specs []event.Spec
	for _, e := range sortedActive(mem) {
		k, a := e.k, e.a
		if !a.Raised || (what != patterntable.AckAll && a.Pattern != what) {
			continue
		}
		// The overflow condition names no port, and "kernel_log" is the
		// word an operator knows: it clears it from any port.
		covers := len(a.Ports) == 0 && (what != patterntable.AckAll || a.Pattern == OverflowName)
		for _, p := range a.Ports {
			if p.Device == device && p.Port == port {
				covers = true
			}
		}
		if covers {
			specs = append(specs, c.clear(mem, k, a, "acknowledged by "+who))
		}
	}
	return specs
}
