package metrics

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/fabricshare"
)

// largeShare is the largest share an assignment may hold: 10,000 switch
// ports (250 switches of 40), every one read.
func largeShare() *fabricshare.ShareReading {
	ports := make([]*fabricshare.SharePort, 10000)
	for i := range ports {
		p := &fabricshare.SharePort{Entry: fabricshare.Entry{SwitchGUID: fmt.Sprintf("0xb83fd20300a%05x", i/40), SwitchName: fmt.Sprintf("ibsw-%04d", i/40),
			SwitchLID: 1 + i/40, Port: 1 + i%40}, Read: true, ReadAt: time.Unix(1_700_000_000, 0), Errors: uint64(i % 3)}
		for j := range p.Counters {
			p.Counters[j] = uint64(i * j)
		}
		ports[i] = p
	}
	return &fabricshare.ShareReading{Valid: true, Ports: ports}
}

// TestIssue40Row1_ConcurrentScrapesShareOneRendering: six scrapes that
// arrive while the page is being made get that one page: one rendering,
// six identical bodies.
func TestIssue40Row1_ConcurrentScrapesShareOneRendering(t *testing.T) {
	src := &fakeSource{block: make(chan struct{}), entered: make(chan struct{}, 8)}
	h := New().newHandler(fabricFake{src, largeShare()})
	bodies := make(chan string, 6)
	for range 6 {
		go func() {
			rec := httptest.NewRecorder()
			h.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			bodies <- rec.Body.String()
		}()
	}
	<-src.entered
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		n := int32(0)
		if h.flight != nil {
			n = h.flight.scrapes.Load()
		}
		h.mu.Unlock()
		if n == 6 {
			break
		}
		if time.Now().After(deadline) {
			close(src.block)
			t.Fatalf("after 10s %d of six scrapes wait for the page in progress, want all six", n)
		}
		time.Sleep(time.Millisecond)
	}
	close(src.block)
	first := <-bodies
	for range 5 {
		if b := <-bodies; b != first {
			t.Fatalf("concurrent scrapes got different pages (%d and %d bytes)", len(first), len(b))
		}
	}
	if !strings.Contains(first, `nichealth_fabric_port_counter{switch_guid="0xb83fd20300a00000",switch_name="ibsw-0000",port="1",counter="LinkDownedCounter"} 0`) {
		t.Fatalf("the shared page lacks the share's series")
	}
	if n := h.renders.Load(); n != 1 {
		t.Errorf("%d renderings for six concurrent scrapes, want 1", n)
	}
}

// TestIssue40Row1_GzipWhenAsked: a scraper that accepts gzip gets the
// page compressed (Prometheus asks for it); the text inside is the page a
// plain scrape gets; gzip;q=0 is a refusal.
func TestIssue40Row1_GzipWhenAsked(t *testing.T) {
	h := New().Handler(fabricFake{unhealthySource(), largeShare()})
	get := func(method, ae string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/metrics", nil)
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	plain := get(http.MethodGet, "")
	if plain.Code != 200 || plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("plain: %d %q", plain.Code, plain.Header().Get("Content-Encoding"))
	}
	if cl := plain.Header().Get("Content-Length"); cl != fmt.Sprint(plain.Body.Len()) {
		t.Errorf("plain Content-Length %s for %d bytes", cl, plain.Body.Len())
	}
	// What Prometheus sends.
	z := get(http.MethodGet, "gzip")
	if z.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(z.Header().Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip asked: headers %v", z.Header())
	}
	if cl := z.Header().Get("Content-Length"); cl != fmt.Sprint(z.Body.Len()) {
		t.Errorf("gzip Content-Length %s for %d bytes", cl, z.Body.Len())
	}
	zr, err := gzip.NewReader(z.Body)
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	mustParse(t, string(text))
	// The runtime families move between two scrapes; the share does not.
	cut := func(s string) string {
		return s[strings.Index(s, "# HELP nichealth_"):strings.Index(s, "# HELP process_")]
	}
	if cut(string(text)) != cut(plain.Body.String()) {
		t.Error("the gzipped page differs from the plain one")
	}
	if z.Body.Len()*4 > len(text) {
		t.Errorf("compressed %d of %d bytes: less than 4 to 1 on a page of repeated labels", z.Body.Len(), len(text))
	}
	small := New().Handler(unhealthySource())
	for ae, want := range map[string]bool{
		"gzip;q=0":               false,
		"identity":               false,
		"deflate, gzip;q=0.5":    true,
		"*":                      true,
		"gzip;q=0, *":            false,
		"br;q=1.0, GZIP ; q=0.8": true,
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", ae)
		rec := httptest.NewRecorder()
		small.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", ae, got, want)
		}
	}
	if head := get(http.MethodHead, "gzip"); head.Code != 200 || head.Body.Len() != 0 {
		t.Errorf("HEAD: %d, %d body bytes", head.Code, head.Body.Len())
	}
}

// heapLive is the bytes of live heap objects after a collection.
func heapLive() uint64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// TestIssue40Row1_SixSlowScrapesOfATenThousandPortShareStayBounded: six
// scrapers of a 10,000-port share (a 24 MiB page) that each read the
// first bytes and then stall, each holding its response open, one after
// another so that each gets a rendering of its own. Their pages stay in
// the heap while they stall: together under 16 MiB (the page as text
// would be 24 MiB each, 144 MiB for six).
func TestIssue40Row1_SixSlowScrapesOfATenThousandPortShareStayBounded(t *testing.T) {
	rd := largeShare()
	srv := httptest.NewServer(New().Handler(fabricFake{unhealthySource(), rd}))
	defer srv.Close()
	// A first scrape, read whole: the encoder's steady buffers exist.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	before := heapLive()

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 6 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		// Shrink the scraper's receive buffer so the server blocks
		// writing early, as against a slow scraper.
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		ae := ""
		if i%2 == 0 {
			ae = "Accept-Encoding: gzip\r\n"
		}
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n%s\r\n", ae)
		br := bufio.NewReaderSize(c, 4096)
		var got bytes.Buffer
		if _, err := io.CopyN(&got, br, 4096); err != nil {
			t.Fatalf("scrape %d: %v", i, err)
		}
		if !strings.HasPrefix(got.String(), "HTTP/1.1 200") {
			t.Fatalf("scrape %d: %q", i, got.String()[:40])
		}
	}
	during := heapLive()
	growth := int64(during) - int64(before)
	t.Logf("live heap %.1f MiB before, %.1f MiB with six stalled scrapes (+%.1f MiB)",
		float64(before)/(1<<20), float64(during)/(1<<20), float64(growth)/(1<<20))
	if growth > 16<<20 {
		t.Errorf("six slow scrapes hold %.1f MiB of heap, want under 16 MiB", float64(growth)/(1<<20))
	}
	runtime.KeepAlive(rd)
}

// BenchmarkScrape_FabricShare10000Ports_SixConcurrent: six scrapers at
// once on the largest share; B/op is what the six cost together.
func BenchmarkScrape_FabricShare10000Ports_SixConcurrent(b *testing.B) {
	h := New().Handler(fabricFake{simSource(b, "dgx-h100", true), largeShare()})
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				if i%2 == 0 {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				h.ServeHTTP(&discardWriter{h: http.Header{}}, req)
			})
		}
		wg.Wait()
	}
}
