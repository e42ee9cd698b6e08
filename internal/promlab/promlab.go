package promlab

import (
	"context"
	"encoding/json"
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

	"github.com/nichealth/nichealthd/internal/component"
	"github.com/nichealth/nichealthd/internal/syncbuf"
)

// Target is one scrape target: its address and the labels Prometheus
// gives its series (an "instance" label here replaces host:port, so a
// test can name its daemons as a fleet names its nodes).
type Target struct {
	Addr   string
	Labels map[string]string
}

// Server is a running Prometheus.
type Server struct {
	// URL is the base URL of its HTTP API, http://127.0.0.1:port.
	URL string
}

// Start runs Prometheus in a temporary directory with the rules (nil for
// none) under job "nichealthd", scraping the targets and evaluating the
// rules every 500 ms, and returns it once it is ready. The test's cleanup
// stops it.
func Start(t *testing.T, rules []byte, targets ...Target) *Server {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		component.Missing(t, "prometheus not in PATH (apt-get install prometheus)")
		return nil
	}
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\n  evaluation_interval: 500ms\n")
	if rules != nil {
		if err := os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "rule_files:\n  - %q\n", filepath.Join(dir, "rules.yml"))
	}
	cfg.WriteString("scrape_configs:\n  - job_name: nichealthd\n    static_configs:\n")
	for _, tg := range targets {
		labels, err := json.Marshal(tg.Labels)
		if err != nil {
			t.Fatal(err)
		}
		// JSON is YAML: the labels need no quoting rules of their own.
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels: %s\n", tg.Addr, labels)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Prometheus takes an address, not a listener: the port is released
	// before it binds it, and a rare collision is retried.
	for attempt := 0; attempt < 3; attempt++ {
		addr := freePort(t)
		logs := &syncbuf.Buffer{}
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, bin,
			"--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data%d", attempt)),
			"--web.listen-address="+addr,
			"--log.level=warn")
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatalf("start prometheus: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cancel(); <-exited })
		s := &Server{URL: "http://" + addr}
		if s.waitReady(exited) {
			return s
		}
		select {
		case <-exited:
			if strings.Contains(logs.String(), "address already in use") {
				continue
			}
			t.Fatalf("prometheus exited:\n%s", logs.String())
		default:
			t.Fatalf("prometheus not ready within 30s:\n%s", logs.String())
		}
	}
	t.Fatal("prometheus found no free port in 3 attempts")
	return nil
}

func (s *Server) waitReady(exited <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := http.Get(s.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Sample is one element of an instant vector.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Query runs an instant query and returns its vector.
func (s *Server) Query(t *testing.T, q string) []Sample {
	t.Helper()
	resp, err := http.Get(s.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []Sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: HTTP %d %v %s\n%s", q, resp.StatusCode, err, r.Error, b)
	}
	return r.Data.Result
}

// Wait runs the query until it returns at least one sample, and returns
// that answer; the test fails when 60 seconds pass without one.
func (s *Server) Wait(t *testing.T, q string) []Sample {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if r := s.Query(t, q); len(r) > 0 {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("query %s never returned a sample", q)
	return nil
}
