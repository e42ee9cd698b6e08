package farend

import (
	"testing"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/mad/wire"
)

// TestFarEndFields_AreWireFields: the counter table names the far end's
// fields by their PMA name and the check finds each one's slot in the
// wire's order; a misspelt or missing name would read another counter.
// The PortCounters positions of IBTA vol. 1 are literals here.
func TestFarEndFields_AreWireFields(t *testing.T) {
	want := map[string]int{
		"SymbolErrorCounter": 0, "LinkErrorRecoveryCounter": 1, "LinkDownedCounter": 2,
		"PortRcvErrors": 3, "PortRcvRemotePhysicalErrors": 4, "PortRcvSwitchRelayErrors": 5,
		"PortXmitDiscards": 6, "PortXmitConstraintErrors": 7, "PortRcvConstraintErrors": 8,
		"LocalLinkIntegrityErrors": 9, "ExcessiveBufferOverrunErrors": 10, "VL15Dropped": 11,
		"PortXmitWait": 16,
	}
	rows := countertable.FarEndTable(countertable.Defaults(), map[string]bool{})
	if len(rows) == 0 {
		t.Fatal("no far-end row judged by default")
	}
	for _, f := range countertable.FarEndFields() {
		at, ok := want[f.Field]
		if !ok {
			t.Errorf("far-end field %q is not a PortCounters error field", f.Field)
			continue
		}
		if got := wire.FieldIndex(f.Field); got != at {
			t.Errorf("%s at wire slot %d, want %d", f.Field, got, at)
		}
	}
	for i := range rows {
		if got := fieldIndex(&rows[i]); got != want[rows[i].Field] {
			t.Errorf("row %s (%s): slot %d, want %d", rows[i].Def.Name, rows[i].Field, got, want[rows[i].Field])
		}
	}
}

// TestJudgedRows_WhatTheCheckJudges: the views mark a far-end field
// judged from the check itself. By default (DESIGN.md section 13) the
// error fields are judged and PortXmitWait is not; switched on, it is,
// under its counter row port_xmit_wait.
func TestJudgedRows_WhatTheCheckJudges(t *testing.T) {
	h := newHarness(t, "")
	got := h.c.JudgedRows()
	if rows := got["SymbolErrorCounter"]; len(rows) == 0 || rows[0] != "symbol_error" {
		t.Errorf("SymbolErrorCounter judged by %v, want symbol_error first", rows)
	}
	if rows, ok := got["PortXmitWait"]; ok {
		t.Errorf("PortXmitWait judged by default: %v", rows)
	}
	h = newHarness(t, "[farEnd.counters]\nPortXmitWait = true\nSymbolErrorCounter = false\n")
	got = h.c.JudgedRows()
	if rows := got["PortXmitWait"]; len(rows) != 1 || rows[0] != "port_xmit_wait" {
		t.Errorf("PortXmitWait switched on judged by %v, want [port_xmit_wait]", rows)
	}
	if rows, ok := got["SymbolErrorCounter"]; ok {
		t.Errorf("SymbolErrorCounter switched off still judged: %v", rows)
	}
}
