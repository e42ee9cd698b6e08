package wire

import "testing"

// TestNumFields_40_12_CountsEveryPortCountersField: IBTA vol. 1's
// PortCounters carries 17 counters (a literal here); every per-field array
// of the project is NumFields long, so it must be the count of Fields.
func TestNumFields_40_12_CountsEveryPortCountersField(t *testing.T) {
	if NumFields != 17 || len(Fields) != NumFields {
		t.Fatalf("NumFields = %d, len(Fields) = %d, want 17", NumFields, len(Fields))
	}
}

// TestFieldIndex_NamesTheFieldsSlot: FieldIndex finds each field by its
// PMA name and says -1 of a name PortCounters has not.
func TestFieldIndex_NamesTheFieldsSlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"SymbolErrorCounter", 0},
		{"LinkDownedCounter", 2},
		{"PortXmitDiscards", 6},
		{"VL15Dropped", 11},
		{"PortXmitWait", 16},
		{"symbolErrorCounter", -1},
		{"PortXmitWaitExt", -1},
		{"", -1},
	} {
		if got := FieldIndex(tc.name); got != tc.want {
			t.Errorf("FieldIndex(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}
