package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// memStatus is what /proc/<pid>/status says about a process's memory, in
// KiB; a field the kernel did not print stays -1.
type memStatus struct {
	VmRSS, VmHWM, RssAnon, RssFile int64
}

// parseStatus reads the memory lines of /proc/<pid>/status ("VmRSS:\t
// 12345 kB"). Unknown lines are skipped; a malformed value leaves its field
// at -1 rather than failing, since the other fields are still good.
func parseStatus(b []byte) memStatus {
	ms := memStatus{-1, -1, -1, -1}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &ms.VmRSS
		case "VmHWM":
			dst = &ms.VmHWM
		case "RssAnon":
			dst = &ms.RssAnon
		case "RssFile":
			dst = &ms.RssFile
		default:
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			continue
		}
		*dst = n
	}
	return ms
}

func readStatus(pid int) (memStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	return parseStatus(b), nil
}

func mib(kib int64) string {
	if kib < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

// pollStats is the daemon's own count of completed polls and their total
// duration, from the poll-duration histogram of its metrics page.
type pollStats struct {
	count int64
	sum   float64 // seconds
}

// parsePollStats finds nichealth_poll_duration_seconds_{count,sum} in a
// Prometheus text page. ok is false when the count is absent or malformed.
func parsePollStats(page []byte) (pollStats, bool) {
	var ps pollStats
	haveCount := false
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch name {
		case "nichealth_poll_duration_seconds_count":
			n, err := strconv.ParseFloat(val, 64)
			if err != nil || n < 0 || n > 1e15 {
				return pollStats{}, false
			}
			ps.count, haveCount = int64(n), true
		case "nichealth_poll_duration_seconds_sum":
			if v, err := strconv.ParseFloat(val, 64); err == nil && v >= 0 {
				ps.sum = v
			}
		}
	}
	return ps, haveCount
}

func scrapePolls(ctx context.Context, addr string) (pollStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return pollStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return pollStats{}, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return pollStats{}, fmt.Errorf("scrape %s: %w", addr, err)
	}
	ps, ok := parsePollStats(page)
	if !ok {
		return pollStats{}, fmt.Errorf("scrape %s: no nichealth_poll_duration_seconds_count on the page", addr)
	}
	return ps, nil
}

// runRSS lets the daemon poll until its own poll counter (the metrics
// endpoint) reaches cycles, and prints its memory at every tenth of the
// way: a flat VmRSS after the first thousand polls is the proof that
// nothing accumulates per poll.
func runRSS(ctx context.Context, n *node, cycles int, w io.Writer) error {
	if n.metrics == "" {
		return fmt.Errorf("rss mode needs the metrics endpoint to count polls")
	}
	pid := n.daemon.Process.Pid
	start := time.Now()
	first, err := scrapePolls(ctx, n.metrics)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%10s %8s %12s %12s %12s %12s %12s\n", "elapsed", "polls", "VmRSS", "VmHWM", "RssAnon", "RssFile", "mean poll")
	report := func(ps pollStats) error {
		st, err := readStatus(pid)
		if err != nil {
			return fmt.Errorf("read memory of nichealthd (pid %d): %w; it may have exited: %s", pid, err, n.lastLog())
		}
		mean := "?"
		if ps.count > 0 {
			mean = ms(time.Duration(ps.sum / float64(ps.count) * float64(time.Second)))
		}
		fmt.Fprintf(w, "%10s %8d %12s %12s %12s %12s %12s\n", time.Since(start).Round(time.Second), ps.count,
			mib(st.VmRSS), mib(st.VmHWM), mib(st.RssAnon), mib(st.RssFile), mean)
		return nil
	}
	if err := report(first); err != nil {
		return err
	}
	next := int64(cycles) / 10
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if err := n.alive(); err != nil {
			return err
		}
		ps, err := scrapePolls(ctx, n.metrics)
		if err != nil {
			return err
		}
		if ps.count < next {
			continue
		}
		if err := report(ps); err != nil {
			return err
		}
		if ps.count >= int64(cycles) {
			return nil
		}
		for next <= ps.count {
			next += int64(cycles) / 10
		}
	}
}
