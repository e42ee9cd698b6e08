package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// largeShareFile is a host's list of 10,000 switch ports: 250 switches
// of 40, switch n at LID n (as testdata/fakemad answers).
func largeShareFile(t *testing.T, path, host string) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"assignments": {%q: [`, host)
	for i := range 10000 {
		if i > 0 {
			b.WriteByte(',')
		}
		sw := i / 40
		fmt.Fprintf(&b, "\n{\"switchGUID\": \"0x%016x\", \"port\": %d, \"switchName\": \"ibsw-%04d\", \"switchLID\": %d}", 0xb83fd20300a00000+uint64(sw), 1+i%40, sw, sw+1)
	}
	b.WriteString("]}}\n")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// slowScrape is a scraper that reads the first bytes of its answer and
// then stops reading, as a stalled Prometheus behind a slow link does.
type slowScrape struct {
	c    net.Conn
	br   *bufio.Reader
	head []byte
}

func startSlowScrape(t *testing.T, metricsURL string, gzipped bool) *slowScrape {
	t.Helper()
	u, err := url.Parse(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	ae := ""
	if gzipped {
		ae = "Accept-Encoding: gzip\r\n"
	}
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n", u.Host, ae)
	s := &slowScrape{c: c, br: bufio.NewReaderSize(c, 4096)}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	head := make([]byte, 2048)
	if _, err := io.ReadFull(s.br, head); err != nil || !bytes.HasPrefix(head, []byte("HTTP/1.1 200")) {
		t.Fatalf("slow scrape: %v %q", err, head[:min(len(head), 80)])
	}
	s.head = head
	return s
}

// TestIssue40Row1_SixSlowScrapesOfALargeShareWithin64MiB: the production
// daemon reads a 10,000-port fabric share (through testdata/fakemad, the
// helper's protocol answered at once) in a memory cgroup of 64 MiB. Six
// scrapers stall one after another on its /metrics page, three asking
// for gzip, while a seventh scrapes whole; then the six read to the end.
// The daemon is never killed, its peak resident set stays under 64 MiB,
// and every page is whole.
func TestIssue40Row1_SixSlowScrapesOfALargeShareWithin64MiB(t *testing.T) {
	t.Parallel()
	bin := productionBinary(t)
	helper := filepath.Join(t.TempDir(), "fakemad")
	if out, err := exec.Command("go", "build", "-o", helper, "./testdata/fakemad").CombinedOutput(); err != nil {
		t.Fatalf("build fakemad: %v\n%s", err, out)
	}
	const limit = 64 << 20
	cg := memCgroup(t, limit)
	share := filepath.Join(t.TempDir(), "share.json")
	largeShareFile(t, share, "gpu-a017")
	n := newNode(t, "dgx-h100", fmt.Sprintf("[farEnd]\nenabled = false\nhelper = %q\n[fabric]\nassignment = %q\nhost = \"gpu-a017\"\ninterval = \"10s\"\ntimeout = \"800ms\"\n", helper, share))
	n.withMetrics()
	n.startIn(cg, bin, "--state-polling-interval", "1s")
	u := n.metricsURL()

	// Every port read once: 10,000 last-read series.
	c := &http.Client{Timeout: 60 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := c.Get(u) // the transport asks for gzip and inflates
		if err != nil {
			t.Fatalf("scrape: %v\n%s", err, n.stderr.Tail())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if k := bytes.Count(body, []byte("\nnichealth_fabric_port_last_read_timestamp_seconds{")); k == 10000 {
			t.Logf("page of %.1f MiB with every port read", float64(len(body))/(1<<20))
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d of 10,000 ports read after 2 minutes\n%s", k, n.stderr.Tail())
		}
		time.Sleep(time.Second)
	}

	var slow []*slowScrape
	for i := range 6 {
		slow = append(slow, startSlowScrape(t, u, i%2 == 0))
		time.Sleep(200 * time.Millisecond)
	}
	// A scrape while six stall: answered whole.
	resp, err := c.Get(u)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a scrape beside six stalled ones: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	during := memStatus(t, n.cmd.Process.Pid)
	// The six read to the end: whole pages.
	for i, s := range slow {
		s.c.SetReadDeadline(time.Now().Add(time.Minute))
		rest, err := io.ReadAll(s.br)
		s.c.Close()
		if err != nil {
			t.Fatalf("slow scrape %d: %v", i, err)
		}
		rest = append(s.head, rest...)
		_, body, ok := bytes.Cut(rest, []byte("\r\n\r\n"))
		if !ok {
			t.Fatalf("slow scrape %d: no headers' end in what followed", i)
		}
		if i%2 == 0 {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("slow scrape %d: %v", i, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("slow scrape %d: %v", i, err)
			}
		}
		if !strings.Contains(string(body), "\nprocess_virtual_memory_bytes ") {
			t.Errorf("slow scrape %d: the page is cut short (%d bytes)", i, len(body))
		}
	}
	st := memStatus(t, n.cmd.Process.Pid)
	t.Logf("VmRSS %.1f MiB with six scrapes stalled, %.1f MiB after; peak %.1f MiB (cgroup limit 64 MiB, failcnt %d)",
		float64(during["VmRSS"])/(1<<20), float64(st["VmRSS"])/(1<<20), float64(st["VmHWM"])/(1<<20), cgroupValue(t, cg, "memory.failcnt"))
	if st["VmHWM"] >= limit {
		t.Errorf("peak resident set %.1f MiB, want under 64 MiB", float64(st["VmHWM"])/(1<<20))
	}
	if oom, err := os.ReadFile(filepath.Join(cg, "memory.oom_control")); err == nil && strings.Contains(string(oom), "oom_kill 1") {
		t.Errorf("the memory cgroup killed the daemon: %s", oom)
	}
	n.stop()
}
