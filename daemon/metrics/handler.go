package metrics

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ContentType is the text exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// defaultScrapeTimeout bounds how long a scrape waits for the Source. A
// Source that takes the daemon's lock can block behind a wedged poll
// cycle; the scrape then fails with 503 instead of hanging, and /healthz
// (which does not wait for the lock) says why.
const defaultScrapeTimeout = 10 * time.Second

// Handler serves, for src:
//
//	GET /metrics  200, the exposition (text format 0.0.4);
//	              503 when src did not answer within the scrape timeout
//	              (Prometheus's X-Prometheus-Scrape-Timeout-Seconds when
//	              shorter, else 10s) or the request was cancelled;
//	              500 when src panicked (the panic is contained);
//	GET /healthz  200 "ok" while the poll loop makes progress, its events
//	              can be made durable and every check runs;
//	              503 "poll loop stalled since <time>" when src.Stalled(),
//	              503 "events cannot be made durable: ..." when
//	              src.Undeliverable() says why, 503 "check <name> failed ..."
//	              while a check disabled by a panic is not running again;
//	GET /         a one-line index; anything else 404, other methods 405.
//
// HEAD works wherever GET does. A nil src answers 500 on both endpoints.
func (m *Metrics) Handler(src Source) http.Handler {
	return m.newHandler(src).mux
}

func (m *Metrics) newHandler(src Source) *handler {
	h := &handler{m: m, src: src}
	ds := descriptors()
	h.descs = ds[:]
	h.order = make([]int, numFamilies)
	for i := range h.order {
		h.order[i] = i
	}
	slices.SortFunc(h.order, func(a, b int) int { return compareStrings(h.descs[a].name, h.descs[b].name) })
	h.enc = newEncoder(numFamilies)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", h.metrics)
	mux.HandleFunc("GET /healthz", h.healthz)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "nichealthd: /metrics (Prometheus text format), /healthz (poll loop liveness)")
	})
	h.mux = mux
	return h
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type handler struct {
	mux   *http.ServeMux
	m     *Metrics
	src   Source
	descs []desc
	order []int // family indexes sorted by name
	// enc and zw are the flight's: at most one flight runs at a time, so
	// one encoder and one compressor serve every rendering.
	enc *encoder
	zw  *gzip.Writer

	mu     sync.Mutex
	flight *flight // the gather in progress, shared by concurrent scrapes
	gzLen  int     // the last page's compressed size (its buffer's start)

	renders atomic.Uint64 // pages rendered since start
}

// flight is one call of the Source's views and one rendering of the page.
// At most one runs at a time: if the Source blocks (a wedged poll cycle
// holding the daemon's lock), later scrapes wait for the same call instead
// of piling up goroutines behind the lock; and every scrape that arrives
// while the page is rendered gets that page, so concurrent scrapes cost
// one rendering, not one each.
type flight struct {
	done chan struct{}
	page *page
	err  error
	// scrapes counts the requests served by this flight.
	scrapes atomic.Int32
}

var errSourcePanicked = errors.New("metrics source panicked")

func (h *handler) start() *flight {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.flight != nil {
		h.flight.scrapes.Add(1)
		return h.flight
	}
	f := &flight{done: make(chan struct{})}
	f.scrapes.Add(1)
	h.flight = f
	go func() {
		defer func() {
			if r := recover(); r != nil {
				f.err = fmt.Errorf("%w: %v", errSourcePanicked, r)
			}
			h.mu.Lock()
			h.flight = nil
			h.mu.Unlock()
			close(f.done)
		}()
		snap := gather(h.src)
		f.page = h.renderPage(&snap)
	}()
	return f
}

func scrapeTimeout(r *http.Request) time.Duration {
	t := defaultScrapeTimeout
	if v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < t.Seconds() {
			t = time.Duration(s * float64(time.Second))
		}
	}
	return t
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if h.src == nil {
		http.Error(w, "metrics unavailable: no source configured", http.StatusInternalServerError)
		return
	}
	timeout := scrapeTimeout(r)
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	f := h.start()
	select {
	case <-f.done:
	case <-ctx.Done():
		http.Error(w, fmt.Sprintf("metrics unavailable: the daemon did not answer within %s (poll loop stalled? see /healthz and journalctl -u nichealthd)", timeout),
			http.StatusServiceUnavailable)
		return
	}
	if f.err != nil {
		http.Error(w, "metrics unavailable: "+f.err.Error(), http.StatusInternalServerError)
		return
	}
	f.page.serve(w, r)
}

// render writes the whole page to e (into e.out, or through e.sink when
// set), families in name order.
func (h *handler) render(e *encoder, s *snapshot) {
	e.reset()
	fill(e, s)
	fillDelivery(e, s)
	e.fabric.build(s.fabric)
	e.writeGo() // go_* sorts before nichealth_*, process_* after
	var counts [numBounds + 1]uint64
	for _, i := range h.order {
		switch {
		case i == mPollDuration:
			bounds, sum := h.m.histogramSnapshot(&counts)
			e.writeHistogram(h.descs[i], bounds[:], counts[:], sum)
		case isFabricPortFamily(i):
			e.writeFabric(h.descs[i], i, s.fabric, &e.fabric)
		default:
			e.writeFamily(h.descs[i], e.samples[i])
		}
	}
	e.writeProcess()
	e.flush()
}

func (h *handler) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.src == nil {
		http.Error(w, "health unknown: no source configured", http.StatusInternalServerError)
		return
	}
	if !h.src.Stalled() {
		if why := h.src.Undeliverable(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "events cannot be made durable: %s; see journalctl -u nichealthd\n", why)
			return
		}
		// The published snapshot, lock-free like the stall test: the
		// monitor is not whole while one of its checks is disabled.
		if s := h.src.Snapshot(); s != nil {
			if failed := s.FailedChecks(); len(failed) > 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				for _, c := range failed {
					fmt.Fprintf(w, "check %s failed at %s and is disabled until the next reload or restart; the other checks keep polling; see journalctl -u nichealthd CHECK_NAME=%s\n",
						c.Entity.Name, c.Since.UTC().Format(time.RFC3339), c.Entity.Name)
				}
				return
			}
		}
		w.Write([]byte("ok\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	if last := h.m.lastPoll(); !last.IsZero() {
		fmt.Fprintf(w, "poll loop stalled since %s (last completed poll); systemd's watchdog will restart nichealthd; see journalctl -u nichealthd\n",
			last.UTC().Format(time.RFC3339))
		return
	}
	fmt.Fprintln(w, "poll loop stalled: no poll has completed since start; systemd's watchdog will restart nichealthd; see journalctl -u nichealthd")
}
