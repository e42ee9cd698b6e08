//go:build cgo

package main

import (
	"encoding/binary"
	"testing"

	"github.com/nichealth/nichealthd/mad/wire"
)

// TestPMA_40_12_PortCountersAtTheSpecsOffsets: a PortCounters attribute
// laid out byte by byte as IBTA vol. 1 (PerformanceManagement,
// PortCounters) places its fields decodes to each field's own value
// through the helper's field list: a field swapped with its neighbour, or
// read at another width, gives another number. Offsets and widths are
// literals from the specification's table, never libibmad's or ours.
func TestPMA_40_12_PortCountersAtTheSpecsOffsets(t *testing.T) {
	d := make([]byte, 192)
	// Selects and reserved bytes carry noise that no counter may read.
	d[1], d[2], d[3], d[18], d[20], d[21] = 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa
	be16 := func(off int, v uint16) { binary.BigEndian.PutUint16(d[off:], v) }
	be32 := func(off int, v uint32) { binary.BigEndian.PutUint32(d[off:], v) }
	be16(4, 0xfffe)      // SymbolErrorCounter, bytes 4-5
	d[6] = 0xfd          // LinkErrorRecoveryCounter, byte 6
	d[7] = 0xfc          // LinkDownedCounter, byte 7
	be16(8, 0x0809)      // PortRcvErrors, bytes 8-9
	be16(10, 0x0a0b)     // PortRcvRemotePhysicalErrors, bytes 10-11
	be16(12, 0x0c0d)     // PortRcvSwitchRelayErrors, bytes 12-13
	be16(14, 0x0e0f)     // PortXmitDiscards, bytes 14-15
	d[16] = 0x10         // PortXmitConstraintErrors, byte 16
	d[17] = 0x11         // PortRcvConstraintErrors, byte 17
	d[19] = 0xa5         // LocalLinkIntegrityErrors bits 7-4 (0xa), ExcessiveBufferOverrunErrors bits 3-0 (0x5)
	be16(22, 0x1617)     // VL15Dropped, bytes 22-23
	be32(24, 0x18191a1b) // PortXmitData
	be32(28, 0x1c1d1e1f) // PortRcvData
	be32(32, 0x20212223) // PortXmitPkts
	be32(36, 0x24252627) // PortRcvPkts
	be32(40, 0x28292a2b) // PortXmitWait
	got, _ := decodePMA(d)
	want := wire.PortCounters{
		SymbolErrorCounter: 0xfffe, LinkErrorRecoveryCounter: 0xfd, LinkDownedCounter: 0xfc,
		PortRcvErrors: 0x0809, PortRcvRemotePhysicalErrors: 0x0a0b, PortRcvSwitchRelayErrors: 0x0c0d,
		PortXmitDiscards: 0x0e0f, PortXmitConstraintErrors: 0x10, PortRcvConstraintErrors: 0x11,
		LocalLinkIntegrityErrors: 0xa, ExcessiveBufferOverrunErrors: 0x5, VL15Dropped: 0x1617,
		PortXmitData: 0x18191a1b, PortRcvData: 0x1c1d1e1f, PortXmitPkts: 0x20212223, PortRcvPkts: 0x24252627,
		PortXmitWait: 0x28292a2b,
	}
	if got != want {
		t.Fatalf("decoded\n %+v\nwant\n %+v", got, want)
	}
}

// TestPMA_40_12_ExtendedErrorsInTheSpecsOrder: PortCountersExtended's
// 64-bit fields, each at its offset in the specification's table
// (PortXmitData at byte 8, ..., SymbolErrorCounter at 72, ...,
// PortXmitWait at 168), decode to their own values: the error fields'
// order is the one promise a swapped pair of enum names breaks silently.
func TestPMA_40_12_ExtendedErrorsInTheSpecsOrder(t *testing.T) {
	d := make([]byte, 256)
	for i := range 8 {
		d[i] = 0xee // reserved, PortSelect, CounterSelect
	}
	at := map[int]uint64{}
	put := func(off int) uint64 {
		// Each value differs in its top and bottom bytes, so a field read
		// one slot over or byte-swapped is another number.
		v := uint64(off)<<56 | 0x00a1b2c3d4e5f600 | uint64(off)
		binary.BigEndian.PutUint64(d[off:], v)
		at[off] = v
		return v
	}
	for off := 8; off <= 176; off += 8 {
		put(off) // 40..64 are the unicast/multicast packet counters, 176 QP1Dropped: read by nobody
	}
	_, ext := decodePMA(d)
	if ext.PortXmitData != at[8] || ext.PortRcvData != at[16] || ext.PortXmitPkts != at[24] || ext.PortRcvPkts != at[32] {
		t.Errorf("data fields %+v, want bytes 8, 16, 24, 32", ext)
	}
	if ext.Errors == nil {
		t.Fatal("no error fields")
	}
	e := ext.Errors
	want := wire.PortCounters{
		SymbolErrorCounter: at[72], LinkErrorRecoveryCounter: at[80], LinkDownedCounter: at[88],
		PortRcvErrors: at[96], PortRcvRemotePhysicalErrors: at[104], PortRcvSwitchRelayErrors: at[112],
		PortXmitDiscards: at[120], PortXmitConstraintErrors: at[128], PortRcvConstraintErrors: at[136],
		LocalLinkIntegrityErrors: at[144], ExcessiveBufferOverrunErrors: at[152], VL15Dropped: at[160],
		PortXmitData: at[8], PortRcvData: at[16], PortXmitPkts: at[24], PortRcvPkts: at[32],
		PortXmitWait: at[168],
	}
	if *e != want {
		t.Fatalf("error fields\n %+v\nwant\n %+v", *e, want)
	}
}
