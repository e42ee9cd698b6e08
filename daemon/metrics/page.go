package metrics

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// page is one rendering of /metrics, shared read-only by every scrape
// that joined its flight. It is kept only compressed: a 10,000-port
// fabric share's page is about 29 MB as text and a small part of that
// compressed, and a slow scraper holds its page for as long as it reads.
// A scraper that asks for gzip gets these bytes as they are; one that
// does not gets them decompressed as they are written, through a small
// window, never a whole copy.
type page struct {
	gz   []byte
	size int // bytes uncompressed
}

// renderPage renders s and compresses it as it is rendered: the text
// goes to the compressor in chunks (spillAt), so neither the encoder nor
// the page ever holds the whole text. Called by the flight only.
func (h *handler) renderPage(s *snapshot) *page {
	h.renders.Add(1)
	buf := bytes.NewBuffer(make([]byte, 0, h.gzLen+h.gzLen/8+4096))
	if h.zw == nil {
		// BestSpeed: the page is label text repeated thousands of
		// times, which even the fastest level compresses well, and
		// the rendering is on a scrape's clock.
		h.zw, _ = gzip.NewWriterLevel(buf, gzip.BestSpeed)
	} else {
		h.zw.Reset(buf)
	}
	e := h.enc
	e.sink = h.zw
	h.render(e, s)
	h.zw.Close()
	e.sink = nil
	// A page far smaller than the last one must not keep the last
	// one's arena and sample buffers for good: a share removed gives
	// its memory back.
	if cap(e.arena) > 4*len(e.arena)+(1<<20) {
		h.enc = newEncoder(numFamilies)
	}
	h.mu.Lock()
	h.gzLen = buf.Len()
	h.mu.Unlock()
	return &page{gz: buf.Bytes(), size: e.spilled}
}

// serve writes the page: compressed when the request accepts gzip.
func (p *page) serve(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", ContentType)
	hd.Set("Vary", "Accept-Encoding")
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		hd.Set("Content-Length", strconv.Itoa(len(p.gz)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write(p.gz)
		}
		return
	}
	hd.Set("Content-Length", strconv.Itoa(p.size))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(p.gz))
	if err != nil {
		return // our own bytes: cannot happen
	}
	io.Copy(w, zr)
}

// acceptsGzip reads Accept-Encoding (RFC 9110 12.5.3): gzip with a
// quality above zero, or * above zero when gzip is not named.
func acceptsGzip(values []string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			coding = strings.TrimSpace(coding)
			q := 1.0
			for param := range strings.SplitSeq(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(param), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			switch {
			case strings.EqualFold(coding, "gzip"):
				gzipQ = q
			case coding == "*":
				starQ = q
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}
