package wire

import (
	"strings"
	"testing"
)

// TestFields_40_12_EveryWidthAndOrderFromTheSpec pins every PortCounters
// field, in the attribute's order, at its width in IBTA vol. 1
// (PerformanceManagement, PortCounters), as literals: a width is where
// a field saturates (an 8-bit LinkDownedCounter stops at 255 and says
// nothing more), so one wrong width is a breach never seen or a false
// "saturated". The byte offsets are pinned against libibmad by the
// helper's spec vectors (cmd/nichealth-mad).
func TestFields_40_12_EveryWidthAndOrderFromTheSpec(t *testing.T) {
	want := []struct {
		name string
		bits uint
		max  uint64
	}{
		{"SymbolErrorCounter", 16, 65535},
		{"LinkErrorRecoveryCounter", 8, 255},
		{"LinkDownedCounter", 8, 255},
		{"PortRcvErrors", 16, 65535},
		{"PortRcvRemotePhysicalErrors", 16, 65535},
		{"PortRcvSwitchRelayErrors", 16, 65535},
		{"PortXmitDiscards", 16, 65535},
		{"PortXmitConstraintErrors", 8, 255},
		{"PortRcvConstraintErrors", 8, 255},
		{"LocalLinkIntegrityErrors", 4, 15},
		{"ExcessiveBufferOverrunErrors", 4, 15},
		{"VL15Dropped", 16, 65535},
		{"PortXmitData", 32, 4294967295},
		{"PortRcvData", 32, 4294967295},
		{"PortXmitPkts", 32, 4294967295},
		{"PortRcvPkts", 32, 4294967295},
		{"PortXmitWait", 32, 4294967295},
	}
	if len(Fields) != len(want) {
		t.Fatalf("%d fields, want %d", len(Fields), len(want))
	}
	for i, w := range want {
		f := Fields[i]
		if f.Name != w.name || f.Bits != w.bits || f.Max() != w.max {
			t.Errorf("field %d: %s %d bits (max %d), want %s %d bits (max %d)", i, f.Name, f.Bits, f.Max(), w.name, w.bits, w.max)
		}
	}
}

// TestFields_40_12_ValuesKeepEachFieldInItsSlot: every field of an answer
// lands in its own slot of Values (the order the check judges and
// saturation is told by), and an answer is refused exactly past each
// field's width, never at it.
func TestFields_40_12_ValuesKeepEachFieldInItsSlot(t *testing.T) {
	c := PortCounters{
		SymbolErrorCounter: 1, LinkErrorRecoveryCounter: 2, LinkDownedCounter: 3, PortRcvErrors: 4,
		PortRcvRemotePhysicalErrors: 5, PortRcvSwitchRelayErrors: 6, PortXmitDiscards: 7, PortXmitConstraintErrors: 8,
		PortRcvConstraintErrors: 9, LocalLinkIntegrityErrors: 10, ExcessiveBufferOverrunErrors: 11, VL15Dropped: 12,
		PortXmitData: 13, PortRcvData: 14, PortXmitPkts: 15, PortRcvPkts: 16, PortXmitWait: 17,
	}
	for i, v := range c.Values() {
		if v != uint64(i+1) {
			t.Errorf("slot %d (%s) holds %d, want %d", i, Fields[i].Name, v, i+1)
		}
	}
	for i, f := range Fields {
		var v [17]uint64
		v[i] = f.Max()
		at := fromValues(v)
		if err := at.validate(); err != nil {
			t.Errorf("%s at its maximum %d refused: %v", f.Name, f.Max(), err)
		}
		v[i] = f.Max() + 1
		past := fromValues(v)
		if err := past.validate(); err == nil || !strings.Contains(err.Error(), f.Name) {
			t.Errorf("%s at %d, past its %d bits: %v", f.Name, f.Max()+1, f.Bits, err)
		}
	}
}

func fromValues(v [17]uint64) PortCounters {
	return PortCounters{
		SymbolErrorCounter: v[0], LinkErrorRecoveryCounter: v[1], LinkDownedCounter: v[2], PortRcvErrors: v[3],
		PortRcvRemotePhysicalErrors: v[4], PortRcvSwitchRelayErrors: v[5], PortXmitDiscards: v[6], PortXmitConstraintErrors: v[7],
		PortRcvConstraintErrors: v[8], LocalLinkIntegrityErrors: v[9], ExcessiveBufferOverrunErrors: v[10], VL15Dropped: v[11],
		PortXmitData: v[12], PortRcvData: v[13], PortXmitPkts: v[14], PortRcvPkts: v[15], PortXmitWait: v[16],
	}
}

// TestClassPortInfo_40_12_CapabilityBitsFromTheSpec: PortCountersExtended
// is offered by CapabilityMask bit 9 (IsExtendedWidthSupported) or bit 10
// (IsExtendedWidthSupportedNoIETF); its 64-bit error counters by
// CapabilityMask2 bit 1 (IsAdditionalPortCountersExtendedSupported).
// Neighbouring bits (AllPortSelect 8, SamplesOnly 11, PortXmitWait 12,
// PM_Key 0 of mask 2) offer neither.
func TestClassPortInfo_40_12_CapabilityBitsFromTheSpec(t *testing.T) {
	for _, tc := range []struct {
		mask, mask2      uint32
		extended, errors bool
	}{
		{1 << 9, 0, true, false},
		{1 << 10, 0, true, false},
		{1 << 9, 1 << 1, true, true},
		{1<<8 | 1<<11 | 1<<12, 1 << 0, false, false},
		{0, 0, false, false},
	} {
		c := ClassPortInfo{CapMask: tc.mask, CapMask2: tc.mask2}
		if c.Extended() != tc.extended || c.ExtendedErrors() != tc.errors {
			t.Errorf("CapabilityMask %#x, CapabilityMask2 %#x: extended %v, extended errors %v; want %v, %v",
				tc.mask, tc.mask2, c.Extended(), c.ExtendedErrors(), tc.extended, tc.errors)
		}
	}
}
