package aer

import (
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/aerfile"
)

// Clear rules, one per class, so every raise has its clear:
//   - fatal: stays until the function's fatal counters go down (a reboot
//     or device reset restarted them), the host reboots (every condition
//     is cleared then), or the operator acknowledges it (Acknowledge);
//   - non-fatal: clears after Thresholds.NonFatalQuiet without new ones;
//   - correctable: clears when the rate over the window is back at or
//     below half the threshold (so a rate hovering at it does not flap).
// New errors of a raised class re-raise it with the new names.

// raise returns the unhealthy event of class cl and records it. rate is
// the correctable rate per minute (0 for the uncorrectable classes).
func (f *Function) raise(fm *FunctionMemory, cl aerfile.Class, moved string, now time.Time, rate float64) event.Spec {
	r, had := fm.Raised[cl.String()]
	if !had {
		r = Raised{Check: f.Check, Since: now}
	}
	r.Last = now
	fm.Raised.Raise(cl.String(), r)
	msg := fmt.Sprintf("PCIe AER on %s (%s): %s %s", f.Address, f.Label, cl.Describe(), moved)
	if cl == aerfile.Correctable {
		msg = fmt.Sprintf("PCIe AER on %s (%s): %s at %.1f per minute over the last %v (threshold %.1f); %s",
			f.Address, f.Label, cl.Describe(), rate, f.window, f.threshold, moved)
	}
	return event.Spec{
		Kind: event.KindPCIeAER, CheckName: r.Check, IsFatal: cl == aerfile.Fatal, Ports: f.Ports,
		Message:   msg + ". " + fix(cl),
		ErrorCode: []string{errorCode(cl), functionCode(cl, f.Address)},
		Metadata:  map[string]string{"pci": f.Address, "aer": cl.String(), "moved": moved, "hop": f.Label},
		Condition: condition.OfPCI(f.Address, cl.String()),
	}
}

// errorCode is the class's error code on its raises (journal field
// ERROR_CODE), with functionCode.
func errorCode(c aerfile.Class) string {
	switch c {
	case aerfile.NonFatal:
		return "PCIE_AER_NONFATAL"
	case aerfile.Fatal:
		return "PCIE_AER_FATAL"
	}
	return "PCIE_AER_CORRECTABLE"
}

// functionCode is the error code of this class's condition on one PCI
// function, which its raise carries besides the class's and its clear
// alone. A switch port and the NIC function below it name the same ports;
// a clear by entity and error code (NVSentinel's platform connector,
// DESIGN.md difference 13) must remove one function's condition, never
// the other's, and never another class's.
func functionCode(c aerfile.Class, pci string) string { return errorCode(c) + "@" + pci }

func fix(cl aerfile.Class) string {
	switch cl {
	case aerfile.Fatal:
		return "An uncorrectable fatal error leaves the link or device unusable until a reset: drain the node, reseat or replace the card (or, on a switch or root port, check the riser and the switch board), update NIC and platform firmware; this stays until the counters reset (reboot, device reset) or it is acknowledged"
	case aerfile.NonFatal:
		return "Transactions were lost on this link: reseat the card, check the riser, update NIC and platform firmware, and replace the card if it recurs; this clears after a quiet period without new errors"
	}
	return "A marginal link retries constantly: reseat the card, check the riser and cabling, update firmware; this clears when the rate falls to half the threshold"
}

// clear returns the healthy counterpart of class cl's condition.
func (f *Function) clear(fm *FunctionMemory, cl aerfile.Class, why string) event.Spec {
	r := fm.Raised[cl.String()]
	delete(fm.Raised, cl.String())
	check := r.Check
	if check == "" {
		check = f.Check
	}
	return event.Spec{
		Kind: event.KindPCIeAERRecovered, CheckName: check, IsHealthy: true, Ports: f.Ports, ErrorCode: []string{functionCode(cl, f.Address)},
		Message:   fmt.Sprintf("PCIe AER on %s (%s): %s condition cleared: %s", f.Address, f.Label, cl.Describe(), why),
		Metadata:  map[string]string{"pci": f.Address, "aer": cl.String(), "hop": f.Label},
		Condition: condition.OfPCI(f.Address, cl.String()),
	}
}

// reset handles counters that went down: the kernel restarted them
// (device reset, driver reload), so the class is re-baselined and its
// condition, whatever it was, cleared.
func (f *Function) reset(fm *FunctionMemory, cl aerfile.Class, now time.Time) []event.Spec {
	if _, ok := fm.Raised[cl.String()]; !ok {
		return nil
	}
	return []event.Spec{f.clear(fm, cl, "its counters were reset (device reset or driver reload)")}
}

// quiet clears a non-fatal condition after the quiet period.
func (f *Function) quiet(fm *FunctionMemory, now time.Time, th Thresholds) []event.Spec {
	r, ok := fm.Raised[aerfile.NonFatal.String()]
	if !ok || now.Sub(r.Last) < th.NonFatalQuiet {
		return nil
	}
	return []event.Spec{f.clear(fm, aerfile.NonFatal, fmt.Sprintf("no new ones for %v", th.NonFatalQuiet))}
}

// rate judges the correctable rate over the window.
func (f *Function) rate(fm *FunctionMemory, total uint64, moved string, now time.Time, th Thresholds) []event.Spec {
	f.window, f.threshold = th.Window, th.CorrectablePerMinute
	f.push(now, total, th.Window, false)
	perMin := f.perMinute(now, total, th.Window)
	_, raised := fm.Raised[aerfile.Correctable.String()]
	switch {
	case !raised && perMin > th.CorrectablePerMinute && th.CorrectablePerMinute > 0:
		if moved == "" {
			moved = "no single name moved in the last read"
		}
		return []event.Spec{f.raise(fm, aerfile.Correctable, moved, now, perMin)}
	case raised && (perMin <= th.CorrectablePerMinute/2 || th.CorrectablePerMinute <= 0):
		// Half the threshold: a rate hovering at the threshold raises
		// once, not at every read.
		return []event.Spec{f.clear(fm, aerfile.Correctable, fmt.Sprintf("the rate fell to %.1f per minute over the last %v (half the threshold %.1f or less)",
			perMin, th.Window, th.CorrectablePerMinute))}
	}
	return nil
}

// push keeps a sample every window/(ringLen-2); force keeps this one.
func (f *Function) push(at time.Time, total uint64, window time.Duration, force bool) {
	if f.rn > 0 {
		last := f.ring[(f.rhead+f.rn-1)%ringLen]
		if total < last.total {
			f.rn = 0 // counters reset: the window starts again
		} else if !force && at.Sub(last.at) < window/(ringLen-2) {
			return
		}
	}
	if f.rn == ringLen {
		f.rhead = (f.rhead + 1) % ringLen
		f.rn--
	}
	f.ring[(f.rhead+f.rn)%ringLen] = sample{at, total}
	f.rn++
}

// perMinute is the errors since the newest sample at least a window old
// (or the oldest), over that span but never less than the window: a burst
// right after the first read is not extrapolated to a huge rate.
func (f *Function) perMinute(now time.Time, total uint64, window time.Duration) float64 {
	if f.rn == 0 || window <= 0 {
		return 0
	}
	base := f.ring[f.rhead]
	for i := 1; i < f.rn; i++ {
		s := f.ring[(f.rhead+i)%ringLen]
		if now.Sub(s.at) < window {
			break
		}
		base = s
	}
	if total < base.total {
		return 0
	}
	span := max(now.Sub(base.at), window)
	return float64(total-base.total) / span.Minutes()
}

// Acknowledge clears the function's uncorrectable conditions at the
// operator's word (D-Bus AcknowledgeReset: the card was reseated or
// replaced without a reboot); the counts stay as they are, so only new
// errors raise again.
func (f *Function) Acknowledge(mem *Memory, who string) []event.Spec {
	fm := mem.Functions[f.Address]
	if fm == nil {
		return nil
	}
	var out []event.Spec
	for _, cl := range []aerfile.Class{aerfile.Fatal, aerfile.NonFatal} {
		if _, ok := fm.Raised[cl.String()]; ok {
			out = append(out, f.clear(fm, cl, "acknowledged by "+who))
		}
	}
	return out
}

// ClearAll clears every condition of the function (it is no longer
// watched: its NICs left, or the check was switched off).
func (f *Function) ClearAll(mem *Memory, why string) []event.Spec {
	fm := mem.Functions[f.Address]
	if fm == nil {
		return nil
	}
	var out []event.Spec
	for cl := aerfile.Class(0); cl < aerfile.NumClasses; cl++ {
		if _, ok := fm.Raised[cl.String()]; ok {
			out = append(out, f.clear(fm, cl, why))
		}
	}
	return out
}
