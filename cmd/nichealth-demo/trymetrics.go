package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// defaultMetrics is where make try's daemon serves /metrics unless told
// otherwise: the address docs/operating.md's curl line uses.
const defaultMetrics = "127.0.0.1:2112"

// metricsAddrFile keeps the address the daemon bound, for the "already
// running" message and make try-fleet's scrape target.
const metricsAddrFile = "metrics.addr"

// chooseMetricsAddr is the address the try node's daemon is told to
// serve on. One given explicitly (METRICS=) is used as is: if the daemon
// cannot bind it, make try fails and says so. Otherwise the default, or,
// when something else already listens there, port 0: the kernel gives
// the daemon a free port and its log says which. A probe cannot reserve
// the default for the daemon (another program may take it in between);
// what the daemon's log says it bound is what make try reports.
func chooseMetricsAddr(explicit string) (addr, note string) {
	if explicit != "" {
		return explicit, ""
	}
	l, err := net.Listen("tcp", defaultMetrics)
	if err != nil {
		return "127.0.0.1:0", fmt.Sprintf("%s is taken (%v), so the daemon listens on a free port", defaultMetrics, errors.Unwrap(err))
	}
	l.Close()
	return defaultMetrics, ""
}

var (
	metricsListening   = regexp.MustCompile(`msg="metrics endpoint listening" addr=(\S+)`)
	metricsUnavailable = regexp.MustCompile(`msg="metrics endpoint unavailable[^"]*" address=(\S+) err=("(?:[^"\\]|\\.)*"|\S+)`)
)

// logLimit bounds what is read of the daemon's log: the lines looked for
// are among its first.
const logLimit = 4 << 20

// boundMetricsAddr waits for the daemon's log to say where its /metrics
// endpoint listens, or why it does not.
func boundMetricsAddr(logPath string, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		text := readLog(logPath)
		if m := metricsListening.FindStringSubmatch(text); m != nil {
			return m[1], nil
		}
		if m := metricsUnavailable.FindStringSubmatch(text); m != nil {
			return "", fmt.Errorf("nichealthd could not serve /metrics on %s: %s", m[1], strings.Trim(m[2], `"`))
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("nichealthd's log (%s) did not say within %v where /metrics listens", logPath, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLog(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, logLimit))
	return string(b)
}

func writeMetricsAddr(dir, addr string) error {
	return os.WriteFile(filepath.Join(dir, metricsAddrFile), []byte(addr+"\n"), 0o644)
}

// readMetricsAddr is the address a running try node's daemon bound ("" if
// unknown).
func readMetricsAddr(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, metricsAddrFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
