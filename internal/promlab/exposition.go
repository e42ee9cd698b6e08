package promlab

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Exposition serves a /metrics page in the text exposition format, as a
// daemon's endpoint does, and returns its address for a Target. page is
// called on every scrape with the scrape's number (1, 2, ...), so a
// counter on the page can rise from one scrape to the next.
func Exposition(t *testing.T, page func(scrape int) string) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(page(int(n.Add(1)))))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
