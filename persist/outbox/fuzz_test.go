package outbox

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOutboxRead opens arbitrary bytes as the only segment. Open and Read
// must never panic and must return records in strictly increasing seq
// order. (Appending after damage is covered by the torn-tail and crash
// tests; its data sync would slow the fuzzer a hundredfold.)
func FuzzOutboxRead(f *testing.F) {
	var good []byte
	for i := 0; i < 3; i++ {
		ev := mkEvent(sev(i), i)
		good, _ = appendRecord(good, uint64(i+1), &ev)
	}
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(append(append([]byte{}, good[:30]...), good...))
	f.Add([]byte{})
	f.Add(magic[:])
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := filepath.Join(root, "outbox")
		os.RemoveAll(dir)
		os.Mkdir(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, segmentName(1)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := Open(dir, Options{Sinks: []string{"a"}, RecentSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		recs, err := o.Read("a", 0)
		if err != nil {
			t.Fatal(err)
		}
		var prev uint64
		for _, r := range recs {
			if r.Seq <= prev {
				t.Fatalf("seq %d after %d", r.Seq, prev)
			}
			prev = r.Seq
		}
		if st := o.Stats(); st.LastSeq >= maxSeq {
			t.Fatalf("next seq would wrap: last %d", st.LastSeq)
		}
		o.Recent(2)
		if st := o.Stats(); st.Records != len(recs) {
			t.Fatalf("stats count %d records, read returned %d", st.Records, len(recs))
		}
	})
}
