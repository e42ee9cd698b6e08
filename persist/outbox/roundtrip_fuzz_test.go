package outbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// FuzzOutboxRoundTrip: what the writer encodes is what the reader returns,
// field for field, not merely in the right order. Records are encoded with
// appendRecord (the bytes Append writes) rather than Append itself, whose
// data sync would slow the fuzzer a hundredfold.
func FuzzOutboxRoundTrip(f *testing.F) {
	f.Add("Port mlx5_3 port 1: state DOWN, phys_state Disabled", "mlx5_3", "state", "DOWN", uint8(1), 3)
	f.Add("Counter \"x\"\nrecovered\t\u00e9", "mlx5_bond_0", "", "\x00", uint8(2), 1)
	f.Add(strings.Repeat("\xff\xfeNH", 8), "", "k", "v\xff", uint8(0), 5)
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, msg, dev, key, val string, flags uint8, n int) {
		if n < 1 || n > 8 {
			n = 1 + (n&7+8)%8
		}
		// JSON carries text; the daemon's strings are UTF-8.
		msg, dev = strings.ToValidUTF8(msg, "?"), strings.ToValidUTF8(dev, "?")
		key, val = strings.ToValidUTF8(key, "?"), strings.ToValidUTF8(val, "?")
		var want []event.Event
		var seg []byte
		for i := 0; i < n; i++ {
			ev := event.New(event.Spec{
				Kind: event.KindCounterBreach, CheckName: event.InfiniBandDegradationCheck,
				IsFatal: flags&1 != 0, IsHealthy: flags&2 != 0,
				Message: msg, Device: dev, Port: i + 1,
				ErrorCode: []string{val}, Metadata: map[string]string{key: val},
			}, event.Stamp{NodeName: "fuzz", Now: time.Unix(1750000000+int64(i), 0).UTC()})
			var err error
			if seg, err = appendRecord(seg, uint64(i+1), &ev); err != nil {
				t.Fatal(err)
			}
			want = append(want, ev)
		}
		dir := filepath.Join(root, "outbox")
		os.RemoveAll(dir)
		os.Mkdir(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, segmentName(1)), seg, 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := Open(dir, Options{Sinks: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		recs, err := o.Read("a", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n {
			t.Fatalf("wrote %d records, read %d", n, len(recs))
		}
		for i, r := range recs {
			if r.Seq != uint64(i+1) || !reflect.DeepEqual(r.Event, want[i]) {
				t.Fatalf("record %d:\n got %d %+v\nwant %d %+v", i, r.Seq, r.Event, i+1, want[i])
			}
		}
	})
}
