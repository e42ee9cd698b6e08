package countertable

import (
	"fmt"
	"slices"
	"strings"
)

// FarEndField is one PortCounters field of the switch port at the other
// end of a cable (DESIGN.md section 13), the rows of the counter table
// whose thresholds judge it, and whether it is judged by default.
type FarEndField struct {
	// Field is the PMA name, as perfquery and the slides print it.
	Field string
	// Rows are the counter table's rows for the same counter (the seed's
	// thresholds); when the seed has none, Own is the row.
	Rows []string
	Own  *Definition
	// Judged by default: the slides leave out PortRcvErrors,
	// PortXmitDiscards, PortXmitWait, VL15Dropped and
	// PortRcvSwitchRelayErrors on the far end, which count the fabric's
	// traffic rather than our cable.
	Judged bool
}

// anyIncrease is a row for a far-end counter the seed has no threshold
// for: any increase between two reads, as ibqueryerrors reports any
// non-zero error counter. The name is the kernel's counter file of the
// same field.
func anyIncrease(name, desc string) *Definition {
	return &Definition{Name: name, Path: "counters/" + name, Enabled: true, ThresholdType: TypeDelta, Threshold: 0, Description: desc}
}

// FarEndFields is every error field of PortCounters, in wire order.
func FarEndFields() []FarEndField {
	return []FarEndField{
		{Field: "SymbolErrorCounter", Rows: []string{"symbol_error", "symbol_error_fatal"}, Judged: true},
		{Field: "LinkErrorRecoveryCounter", Rows: []string{"link_error_recovery"}, Judged: true},
		{Field: "LinkDownedCounter", Rows: []string{"link_downed"}, Judged: true},
		{Field: "PortRcvErrors", Rows: []string{"port_rcv_errors"}},
		{Field: "PortRcvRemotePhysicalErrors", Judged: true,
			Own: anyIncrease("port_rcv_remote_physical_errors", "packets received marked bad by the sender")},
		{Field: "PortRcvSwitchRelayErrors",
			Own: anyIncrease("port_rcv_switch_relay_errors", "packets the switch could not relay")},
		{Field: "PortXmitDiscards", Rows: []string{"port_xmit_discards"}},
		{Field: "PortXmitConstraintErrors", Judged: true,
			Own: anyIncrease("port_xmit_constraint_errors", "packets not sent for partition or raw-packet constraints")},
		{Field: "PortRcvConstraintErrors", Judged: true,
			Own: anyIncrease("port_rcv_constraint_errors", "packets received and dropped for partition or raw-packet constraints")},
		{Field: "LocalLinkIntegrityErrors", Rows: []string{"local_link_integrity_errors"}, Judged: true},
		{Field: "ExcessiveBufferOverrunErrors", Rows: []string{"excessive_buffer_overrun_errors"}, Judged: true},
		{Field: "VL15Dropped", Own: anyIncrease("VL15_dropped", "subnet management packets dropped")},
		{Field: "PortXmitWait", Rows: []string{"port_xmit_wait"}},
	}
}

// FarEndRow is one judged row of the far end: a PortCounters field and
// the counter table's definition of its threshold, always non-fatal (the
// far end is evidence about our link, not a failure of this node's NIC).
type FarEndRow struct {
	// Field is the PortCounters field's PMA name; its position in the
	// wire format is the wire's to say (wire.FieldIndex), not the table's.
	Field string
	Def   Definition
}

// Code is the error code of the row's condition: "peer:<counter>".
func (r *FarEndRow) Code() string { return PeerCode(r.Def.Name) }

// PeerCode is the error code of a far-end condition of the counter row
// name: "peer:symbol_error".
func PeerCode(row string) string { return "peer:" + row }

// PeerRow reads a far-end error code back ("" when code is not one).
func PeerRow(code string) string {
	if r, ok := strings.CutPrefix(code, "peer:"); ok {
		return r
	}
	return ""
}

// FarEndTable resolves which far-end rows are judged: every field judged
// by default or switched on in judge (field name → on), each with the
// current threshold of its counter table rows; a row disabled in the
// table is not judged on the far end either. judge must name fields of
// FarEndFields (ValidateFarEnd).
func FarEndTable(table []Definition, judge map[string]bool) []FarEndRow {
	byName := map[string]*Definition{}
	for i := range table {
		byName[table[i].Name] = &table[i]
	}
	var out []FarEndRow
	for _, f := range FarEndFields() {
		on := f.Judged
		if v, ok := judge[f.Field]; ok {
			on = v
		}
		if !on {
			continue
		}
		if f.Own != nil {
			out = append(out, FarEndRow{Field: f.Field, Def: *f.Own})
			continue
		}
		for _, name := range f.Rows {
			d, ok := byName[name]
			if !ok || !d.Enabled {
				continue
			}
			row := *d
			row.IsFatal = false
			out = append(out, FarEndRow{Field: f.Field, Def: row})
		}
	}
	return out
}

// FarEndSwitches is whether each field is judged: its default, or what
// judge says of it. A file that spells out a default and one that leaves
// it out make the same configuration.
func FarEndSwitches(judge map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, f := range FarEndFields() {
		on := f.Judged
		if v, ok := judge[f.Field]; ok {
			on = v
		}
		out[f.Field] = on
	}
	return out
}

// ValidateFarEnd checks the [farEnd.counters] switches: every key is a
// PortCounters error field.
func ValidateFarEnd(judge map[string]bool) error {
	var known []string
	for _, f := range FarEndFields() {
		known = append(known, f.Field)
	}
	var bad []string
	for k := range judge {
		if !slices.Contains(known, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%s: not a PortCounters error field (known: %s)", strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	return nil
}
