package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startTryNode runs nichealth-demo --keep in a fresh directory with extra
// flags and returns its exit code, stdout and stderr; a started node is
// stopped at cleanup.
func startTryNode(t *testing.T, bin string, extra ...string) (dir string, code int, stdout, stderr string) {
	t.Helper()
	dir = t.TempDir()
	args := append([]string{"--keep", "--dir", dir, "--bin", bin, "--interval", "100ms",
		"--policy", "../../packaging/dbus/org.nichealth.NicHealth1.conf"}, extra...)
	cmd := exec.Command(filepath.Join(binDir, "nichealth-demo"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Cleanup(func() { _ = exec.Command(filepath.Join(binDir, "nichealth-demo"), "--stop", "--dir", dir).Run() })
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return dir, cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

var metricsOn = regexp.MustCompile(`metrics on http://(127\.0\.0\.1:\d+)/metrics`)

// The default port taken by another program: make try gives the daemon a
// free one and prints the address the daemon bound, which serves this
// node's page (not the other program's).
func TestTry_DefaultMetricsPortTakenReportsTheBoundOne(t *testing.T) {
	needDBus(t)
	// Whoever holds 127.0.0.1:2112 now (this test or another program),
	// make try must not claim it.
	if l, err := net.Listen("tcp", "127.0.0.1:2112"); err == nil {
		defer l.Close()
	}
	_, code, out, errs := startTryNode(t, binDir)
	if code != 0 {
		t.Fatalf("make try exited %d:\n%s\n%s", code, out, errs)
	}
	m := metricsOn.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("make try did not say where /metrics is:\n%s", out)
	}
	if m[1] == "127.0.0.1:2112" {
		t.Fatalf("make try claims the taken port 127.0.0.1:2112:\n%s", out)
	}
	if !strings.Contains(out, "127.0.0.1:2112 is taken") {
		t.Errorf("make try does not say why it moved off 127.0.0.1:2112:\n%s", out)
	}
	page := get(t, "http://"+m[1]+"/metrics")
	if !strings.Contains(page, "nichealth_monitored_ports 12") {
		t.Errorf("%s is not the try node's page (want nichealth_monitored_ports 12):\n%.2000s", m[1], page)
	}
}

// METRICS= names a port that is taken: make try fails, says why, and
// leaves nothing running.
func TestTry_MetricsAddressTakenFailsSayingWhy(t *testing.T) {
	needDBus(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().String()
	dir, code, out, errs := startTryNode(t, binDir, "--metrics-address", busy)
	if code == 0 {
		t.Fatalf("make try with METRICS=%s (taken) exited 0:\n%s", busy, out)
	}
	for _, want := range []string{"could not serve /metrics on " + busy, "address already in use", "METRICS=" + busy} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, pidFileName)); !os.IsNotExist(err) {
		t.Errorf("a failed make try left %s behind (err %v)", pidFileName, err)
	}
}

// A daemon that exits at start: make try fails with its log, not a
// claim that a node is running.
func TestTry_DaemonThatDoesNotStartFails(t *testing.T) {
	needDBus(t)
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'nichealthd: config: sysfsRoot: no such directory (fix: point it at a host tree)' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "nichealthd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, code, out, errs := startTryNode(t, bin)
	if code == 0 {
		t.Fatalf("make try with a daemon that exits at start exited 0:\n%s", out)
	}
	if !strings.Contains(errs, "did not become ready") || !strings.Contains(errs, "no such directory") {
		t.Errorf("stderr does not say the daemon did not start and why:\n%s", errs)
	}
	if strings.Contains(out, "is running") {
		t.Errorf("stdout claims a running node:\n%s", out)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
