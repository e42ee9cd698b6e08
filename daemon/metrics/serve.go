package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"
)

// shutdownGrace is how long Serve lets in-flight scrapes finish at stop.
const shutdownGrace = 2 * time.Second

// Serve listens on addr (host:port, e.g. "127.0.0.1:2112") and serves h
// until ctx is done. Outcomes:
//
//	listen fails          an error naming the address and the fix;
//	ctx done              nil, after in-flight requests finished or were
//	                      cut off after a short grace;
//	the server fails      that error.
//
// A non-loopback address is allowed but logged as a warning: the page
// lists the node's NICs, roles and health to anyone who can reach it. A nil
// log discards.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			// The packaged unit allows only AF_UNIX until the metrics
			// drop-in is installed.
			return fmt.Errorf("metrics endpoint: listen on %s: %w (the service sandbox forbids TCP: install the drop-in /usr/share/doc/nichealthd/examples/metrics.conf as /etc/systemd/system/nichealthd.service.d/metrics.conf, see nichealthd(8) METRICS)", addr, err)
		}
		return fmt.Errorf("metrics endpoint: listen on %s: %w (set metricsAddress to a free host:port such as 127.0.0.1:2112, or leave it empty to disable metrics)", addr, err)
	}
	return ServeListener(ctx, ln, h, log)
}

// ServeListener is Serve on a listener the caller opened (for example one
// passed by systemd socket activation). It closes ln.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !isLoopback(ln.Addr()) {
		log.Warn("metrics endpoint listens beyond loopback; anyone who can reach it sees this node's NICs and their health",
			"addr", ln.Addr().String(), "fix", "set metricsAddress = \"127.0.0.1:2112\" unless remote scraping is intended and firewalled")
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Request contexts end with ctx, so a scrape waiting on a blocked
		// Source returns at shutdown instead of holding it up.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	log.Info("metrics endpoint listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics endpoint on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics endpoint on %s: %w", ln.Addr(), err)
	}
	log.Info("metrics endpoint stopped", "addr", ln.Addr().String())
	return nil
}

func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
