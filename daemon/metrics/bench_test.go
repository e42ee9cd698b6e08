package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/mad/fabricshare"
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

// BenchmarkScrape_FabricShare10000Ports: one scrape of a node reading the
// largest share an assignment may hold (10,000 switch ports, each read:
// 17 counters, its failed reads and its last read), beside a DGX H100's
// own ports. The page is about 190,000 series; its cost is per scrape,
// never on the poll loop.
func BenchmarkScrape_FabricShare10000Ports(b *testing.B) {
	ports := make([]*fabricshare.SharePort, 10000)
	for i := range ports {
		p := &fabricshare.SharePort{Entry: fabricshare.Entry{SwitchGUID: fmt.Sprintf("0xb83fd20300a%05x", i/40), SwitchName: fmt.Sprintf("ibsw-%04d", i/40),
			SwitchLID: 1 + i/40, Port: 1 + i%40}, Read: true, ReadAt: time.Unix(1_700_000_000, 0)}
		for j := range p.Counters {
			p.Counters[j] = uint64(i * j)
		}
		ports[i] = p
	}
	src := fabricFake{simSource(b, "dgx-h100", true), &fabricshare.ShareReading{Valid: true, Ports: ports}}
	h := New().Handler(src)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("status %d", rec.Code)
	}
	b.SetBytes(int64(rec.Body.Len()))
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(rec.Body.Len())/(1<<20), "page-MiB")
}

// BenchmarkScrape_dgxH100FarEnds is BenchmarkScrape_dgxH100 with the far
// end of each of its 8 InfiniBand ports read (17 PortCounters fields, a
// latched breach each) and its read errors counted: what a DGX H100 on a
// fabric serves.
func BenchmarkScrape_dgxH100FarEnds(b *testing.B) {
	src := simSource(b, "dgx-h100", true)
	src.peers = map[string]*health.Peer{}
	for _, pv := range src.ports {
		if pv.LinkLayer != "InfiniBand" {
			continue
		}
		p := &health.Peer{GUID: "0xb83fd20300a01000", PortGUID: "0xb83fd20300a01000", Port: 17, LID: 3, Name: "ibsw-leaf1", Switch: true,
			Found: true, ReadAt: time.Unix(1_700_000_000, 0), ReadErrors: 3}
		for i := range 17 {
			p.Counters = append(p.Counters, health.PeerCounter{Field: fmt.Sprintf("Field%d", i), Value: uint64(i), Bits: 32, Judged: i < 8})
		}
		p.Counters[0].Latched = []string{"symbol_error"}
		src.peers[fmt.Sprintf("%s/%d", pv.Device, pv.Port)] = p
	}
	h := New().Handler(src)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	w := &discardWriter{h: http.Header{}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "nichealth_peer_port_read_errors_total") {
		b.Fatalf("status %d", rec.Code)
	}
	b.SetBytes(int64(rec.Body.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}
