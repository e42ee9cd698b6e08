package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// discardWriter is a ResponseWriter that drops the body, so the benchmark
// measures gathering and encoding rather than a recorder's buffer growth.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkScrape_dgxH100: one /metrics scrape of a DGX H100 (13 PF ports
// from the simulator, 14 counters each).
func BenchmarkScrape_dgxH100(b *testing.B) {
	src := simSource(b, "dgx-h100", true)
	m := New()
	for i := 0; i < 100; i++ {
		m.ObservePoll(time.Duration(i) * time.Millisecond)
	}
	h := m.Handler(src)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	w := &discardWriter{h: http.Header{}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("status %d", rec.Code)
	}
	b.SetBytes(int64(rec.Body.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

func BenchmarkObservePoll(b *testing.B) {
	m := New()
	b.ReportAllocs()
	d := time.Duration(0)
	for b.Loop() {
		d += 37 * time.Microsecond
		m.ObservePoll(d % (3 * time.Second))
	}
}

func BenchmarkObservePoll_Parallel(b *testing.B) {
	m := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObservePoll(3 * time.Millisecond)
		}
	})
}
