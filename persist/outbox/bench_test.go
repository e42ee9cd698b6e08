package outbox

import "testing"

func benchAppend(b *testing.B, batch int) {
	o := mustOpen(b, b.TempDir(), Options{Sinks: []string{"a"}})
	defer o.Close()
	evs := mkEvents(nonFatal, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.Append(evs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/event")
}

// BenchmarkAppend_OneEventFsync: one event per call, one data sync each.
func BenchmarkAppend_OneEventFsync(b *testing.B) { benchAppend(b, 1) }

// BenchmarkAppend_Batch16Fsync: sixteen events per call, one data sync.
func BenchmarkAppend_Batch16Fsync(b *testing.B) { benchAppend(b, 16) }

// BenchmarkRead reads 64-record batches from a 10 000-record backlog.
func BenchmarkRead(b *testing.B) {
	o := mustOpen(b, b.TempDir(), Options{Sinks: []string{"a"}})
	defer o.Close()
	for i := 0; i < 10000; i += 100 {
		if _, err := o.Append(mkEvents(nonFatal, i, 100)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs, err := o.Read("a", 64)
		if err != nil || len(recs) != 64 {
			b.Fatal(len(recs), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/record")
}
