package counters

import (
	"fmt"
	"strings"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
)

// SaturationLimit returns the value at which a classic PMA counter stops
// (its field width is fixed by the InfiniBand PortCounters attribute) and
// that width in bits. ok is false for every other path: hw_counters and
// netdev counters are 64-bit and wrap, if ever, far beyond any practical
// reading. Seen on a ConnectX-7 in the field: link_downed stuck at 255,
// port_xmit_discards at 65535, port_xmit_wait at 4294967295,
// excessive_buffer_overrun_errors at 15 — after which the counter can no
// longer show a single new error.
func SaturationLimit(path string) (limit uint64, bits int, ok bool) {
	name, found := strings.CutPrefix(path, "counters/")
	if !found {
		return 0, 0, false
	}
	switch name {
	case "symbol_error", "port_rcv_errors", "port_xmit_discards",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "VL15_dropped":
		return 1<<16 - 1, 16, true
	case "link_error_recovery", "link_downed", "port_xmit_constraint_errors", "port_rcv_constraint_errors":
		return 1<<8 - 1, 8, true
	case "local_link_integrity_errors", "excessive_buffer_overrun_errors":
		return 1<<4 - 1, 4, true
	case "port_xmit_wait":
		return 1<<32 - 1, 32, true
	}
	return 0, 0, false
}

// saturation raises, once per file, a classic PMA counter stuck at its
// maximum: a non-fatal loss of visibility (DESIGN.md difference 14), and
// clears it when the counter moves again (its counters were cleared, or the
// device reset).
func (e *Evaluator) saturation(st *Memory, s *Sample, ent *memEntry) (*event.Spec, bool) {
	limit, bits, ok := SaturationLimit(s.Def.Path)
	if !ok {
		return nil, false
	}
	if s.Value != limit && len(st.Saturated) == 0 {
		return nil, false
	}
	if ent.satFor != s.Def.Path || ent.satKey == "" {
		ent.satKey = Key(s.Device, s.Port, countertable.FileName(s.Def.Path))
		ent.satFor = s.Def.Path
	}
	since, marked := st.Saturated[ent.satKey]
	switch {
	case s.Value == limit && !marked:
		st.Saturated[ent.satKey] = s.Now
		st.raisedUnder(ent.satKey, event.DegradationCheckFor(s.LinkLayer))
		sp := saturatedSpec(s, event.DegradationCheckFor(s.LinkLayer), limit, bits)
		return &sp, true
	case s.Value != limit && marked:
		check := st.checkOf(ent.satKey)
		delete(st.Saturated, ent.satKey)
		st.raisedUnder(ent.satKey, "")
		sp := unsaturatedSpec(countertable.FileName(s.Def.Path), s.Device, s.Port, check, since,
			fmt.Sprintf("Port %s port %d: %s moves again (now %d, below its %d-bit maximum %d); new errors are visible",
				s.Device, s.Port, countertable.FileName(s.Def.Path), s.Value, bits, limit))
		return &sp, true
	}
	return nil, false
}
