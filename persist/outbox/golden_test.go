package outbox

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// goldenPath holds one record as this version writes it: a fatal port event
// with sequence number 7. The file is checked in: a change of the on-disk
// format must be deliberate (an old outbox must still be readable after an
// upgrade), and this test is what makes it visible.
var goldenPath = filepath.Join("testdata", "golden_record_seq7.bin")

// goldenUpdateEnv rewrites the golden file from the current encoder.
const goldenUpdateEnv = "NICHEALTH_UPDATE_GOLDEN"

func goldenRecord(t *testing.T) []byte {
	t.Helper()
	if os.Getenv(goldenUpdateEnv) != "" {
		ev := mkEvent(fatal, 3)
		b, err := appendRecord(nil, 7, &ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("read %s: %v (regenerate with %s=1)", goldenPath, err, goldenUpdateEnv)
	}
	return b
}

// TestOutbox_GoldenRecord: the checked-in bytes parse to the record they
// were written from, and encoding that record again gives the same bytes.
func TestOutbox_GoldenRecord(t *testing.T) {
	b := goldenRecord(t)
	// The header layout, field by field.
	if !bytes.Equal(b[0:4], []byte{0xFF, 'N', 'H', 0xFE}) {
		t.Fatalf("magic % x", b[0:4])
	}
	if n := binary.LittleEndian.Uint32(b[4:8]); int(n) != len(b)-24 {
		t.Fatalf("length field %d, payload %d bytes", n, len(b)-24)
	}
	if seq := binary.LittleEndian.Uint64(b[12:20]); seq != 7 {
		t.Fatalf("sequence field %d", seq)
	}
	if b[20] != 1 || b[21] != 0 || b[22] != 0 || b[23] != 0 {
		t.Fatalf("flags/reserved % x, want fatal (01) and zeros", b[20:24])
	}
	e, ok := parseAt(b, 0)
	if !ok || e.seq != 7 || e.size != int32(len(b)) || e.flags != flagFatal || e.droppable() {
		t.Fatalf("parseAt = %+v, %v", e, ok)
	}
	r, err := decode(b, 0, e)
	if err != nil {
		t.Fatal(err)
	}
	want := mkEvent(fatal, 3)
	want.ID = r.Event.ID // random per event; kept from the golden bytes
	if r.Seq != 7 || !reflect.DeepEqual(r.Event, want) {
		t.Fatalf("decoded %+v\nwant    %+v", r, want)
	}
	again, err := appendRecord(nil, 7, &r.Event)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("re-encoding the golden record changed its bytes:\n got % x\nwant % x", again[:24], b[:24])
	}
}

// freshRecord is the golden record's event encoded by the current code,
// so that the flip tests judge the writer and the reader together.
func freshRecord(t *testing.T) []byte {
	t.Helper()
	ev := mkEvent(fatal, 3)
	b, err := appendRecord(nil, 7, &ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flipEveryBit flips each bit of b[from:to] in turn and checks that the
// record is no longer accepted, neither at its offset nor by a scan.
func flipEveryBit(t *testing.T, field string, from, to int) {
	t.Helper()
	rec := freshRecord(t)
	// Slack after the record, so that a length that grows by a little
	// still finds bytes to cover and only the checksum can object.
	buf := append(append([]byte(nil), rec...), make([]byte, 64)...)
	if _, ok := parseAt(buf, 0); !ok {
		t.Fatal("the unflipped record is not accepted")
	}
	if to < 0 {
		to = len(rec)
	}
	for i := from; i < to; i++ {
		for bit := 0; bit < 8; bit++ {
			b := append([]byte(nil), buf...)
			b[i] ^= 1 << bit
			if e, ok := parseAt(b, 0); ok {
				t.Fatalf("%s: bit %d of byte %d flipped, record still accepted: %+v", field, bit, i, e)
			}
			if ents, _ := scan(b); len(ents) != 0 {
				t.Fatalf("%s: bit %d of byte %d flipped, scan found %+v", field, bit, i, ents)
			}
		}
	}
}

func TestOutbox_FlippedBitDetected_Magic(t *testing.T)    { flipEveryBit(t, "magic", 0, 4) }
func TestOutbox_FlippedBitDetected_Length(t *testing.T)   { flipEveryBit(t, "length", 4, 8) }
func TestOutbox_FlippedBitDetected_CRC(t *testing.T)      { flipEveryBit(t, "crc", 8, 12) }
func TestOutbox_FlippedBitDetected_Sequence(t *testing.T) { flipEveryBit(t, "sequence", 12, 20) }
func TestOutbox_FlippedBitDetected_Flags(t *testing.T)    { flipEveryBit(t, "flags", 20, 21) }
func TestOutbox_FlippedBitDetected_Reserved(t *testing.T) { flipEveryBit(t, "reserved", 21, 24) }
func TestOutbox_FlippedBitDetected_Payload(t *testing.T)  { flipEveryBit(t, "payload", 24, -1) }
