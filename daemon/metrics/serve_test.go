package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/nichealth/nichealthd/internal/component"
)

// addrCatcher is a slog handler that hands over the address Serve logs
// when it starts listening (the port is chosen by the kernel), and keeps
// warnings.
type addrCatcher struct {
	addr  chan string
	mu    *sync.Mutex
	warns *[]string
}

func newAddrCatcher() addrCatcher {
	return addrCatcher{addr: make(chan string, 1), mu: &sync.Mutex{}, warns: &[]string{}}
}

func (c addrCatcher) Enabled(context.Context, slog.Level) bool { return true }
func (c addrCatcher) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c addrCatcher) WithGroup(string) slog.Handler            { return c }
func (c addrCatcher) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		c.mu.Lock()
		*c.warns = append(*c.warns, r.Message)
		c.mu.Unlock()
	}
	if r.Message == "metrics endpoint listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				c.addr <- a.Value.String()
			}
			return true
		})
	}
	return nil
}

func (c addrCatcher) warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), *c.warns...)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func TestServe_7_LoopbackEndToEnd(t *testing.T) {
	m := New()
	src := unhealthySource()
	src.stalled = false
	cat := newAddrCatcher()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, "127.0.0.1:0", m.Handler(src), slog.New(cat)) }()
	var addr string
	select {
	case addr = <-cat.addr:
	case err := <-errc:
		t.Fatalf("Serve: %v", err)
	}
	m.ObservePoll(1500000) // 1.5ms
	code, page := get(t, "http://"+addr+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics %d: %s", code, page)
	}
	fams := mustParse(t, page)
	if v := fams["nichealth_poll_duration_seconds"].value(t, "le", "0.0025"); v != 1 {
		t.Errorf("histogram bucket 0.0025 = %v", v)
	}
	if code, body := get(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz %d %q", code, body)
	}
	src.setStalled(true)
	if code, body := get(t, "http://"+addr+"/healthz"); code != 503 || !strings.Contains(body, "stalled since") {
		t.Errorf("/healthz stalled %d %q", code, body)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if w := cat.warnings(); len(w) != 0 {
		t.Errorf("warnings on loopback: %v", w)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Errorf("%s still accepts connections after shutdown", addr)
	}
}

func TestServe_7_ShutdownReleasesBlockedScrape(t *testing.T) {
	// A scrape stuck behind a wedged Source must not hold up daemon stop.
	src := &fakeSource{block: make(chan struct{}), entered: make(chan struct{}, 4)}
	defer close(src.block)
	cat := newAddrCatcher()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, "127.0.0.1:0", New().Handler(src), slog.New(cat)) }()
	addr := <-cat.addr
	scraped := make(chan int, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			scraped <- 0
			return
		}
		resp.Body.Close()
		scraped <- resp.StatusCode
	}()
	<-src.entered
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if code := <-scraped; code != 0 && code != http.StatusServiceUnavailable {
		t.Errorf("blocked scrape ended with %d", code)
	}
}

func TestServe_7_ListenErrorNamesAddressAndFix(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Serve(context.Background(), ln.Addr().String(), New().Handler(&fakeSource{}), nil)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "metricsAddress") {
		t.Fatalf("error %v should name %s and metricsAddress", err, ln.Addr())
	}
}

func TestServe_7_NonLoopbackWarns(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		component.Missing(t, "cannot listen on all interfaces here: %v", err)
	}
	cat := newAddrCatcher()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ServeListener(ctx, ln, New().Handler(&fakeSource{}), slog.New(cat)) }()
	<-cat.addr
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	w := cat.warnings()
	if len(w) != 1 || !strings.Contains(w[0], "beyond loopback") {
		t.Fatalf("warnings %v", w)
	}
}

func TestServe_7_IsLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 2112}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.8.9.10"), Port: 2112}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 2112}, true},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 2112}, false},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 2112}, false},
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 2112}, false},
		{&net.UnixAddr{Name: "/run/nichealthd/metrics.sock", Net: "unix"}, true},
	} {
		if got := isLoopback(tc.addr); got != tc.want {
			t.Errorf("isLoopback(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
