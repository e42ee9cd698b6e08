package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
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

// parseSyscr returns the syscr line of /proc/<pid>/io: read-type system
// calls, which a steady poll makes one of per planned file.
func parseSyscr(b []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == "syscr" {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

func readStatus(pid int) (memStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	return parseStatus(b), nil
}

func readSyscr(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, false
	}
	return parseSyscr(b)
}

func mib(kib int64) string {
	if kib < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

// runRSS lets the daemon poll for cycles x interval after its first poll
// and reports its memory ten times along the way. The cycle count is wall
// time over the interval, which holds while a poll is shorter than the
// interval; the read-syscall count per cycle printed beside it shows
// whether it did (it equals the files per cycle when the estimate holds,
// and exceeds it when polls ran back to back).
func runRSS(ctx context.Context, n *node, cycles int, w io.Writer) error {
	pid := n.daemon.Process.Pid
	total := time.Duration(cycles) * n.interval
	start := time.Now()
	reads0, haveIO := readSyscr(pid)
	fmt.Fprintf(w, "%10s %10s %12s %12s %12s %12s %12s\n", "elapsed", "~cycles", "VmRSS", "VmHWM", "RssAnon", "RssFile", "reads/cycle")
	report := func() error {
		el := time.Since(start)
		st, err := readStatus(pid)
		if err != nil {
			return fmt.Errorf("read memory of nichealthd (pid %d): %w; it may have exited: %s", pid, err, n.lastLog())
		}
		c := int64(el / n.interval)
		perCycle := "?"
		if r, ok := readSyscr(pid); ok && haveIO && c > 0 {
			perCycle = fmt.Sprintf("%.1f", float64(r-reads0)/float64(c))
		}
		fmt.Fprintf(w, "%10s %10d %12s %12s %12s %12s %12s\n", el.Round(time.Second), c,
			mib(st.VmRSS), mib(st.VmHWM), mib(st.RssAnon), mib(st.RssFile), perCycle)
		return nil
	}
	if err := report(); err != nil {
		return err
	}
	step := total / 10
	for i := 1; i <= 10; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(time.Duration(i) * step))):
		}
		if err := n.alive(); err != nil {
			return err
		}
		if err := report(); err != nil {
			return err
		}
	}
	return nil
}
