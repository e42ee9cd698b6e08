package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func writeConfig(t *testing.T, h *sim.Host, dir, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "config.toml")
	c := fmt.Sprintf("sysfsRoot = %q\nprocfsRoot = %q\ndevRoot = %q\nmetadataPath = %q\nnodeName = \"t\"\npollingInterval = \"50ms\"\n%s\n[sinks.journal]\nenabled = false\n",
		h.SysRoot(), h.ProcRoot(), h.DevRoot(), h.MetadataPath(), extra)
	if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func startDaemon(t *testing.T, cfgPath, stateDir string) (*Daemon, context.CancelFunc, chan error) {
	t.Helper()
	d, err := New(Options{ConfigPath: cfgPath, StateFile: filepath.Join(stateDir, "state.json"),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitFor(t, "first poll", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.ready
	})
	return d, cancel, done
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// goroutineCensus counts the goroutines running the project's or godbus's
// code, other than the test's own and those that existed before the test
// began (earlier tests of the package are not this one to judge): the
// runtime's signal loop and exec's pipe copiers for the test's own
// dbus-daemon are not the daemon's to stop.
type goroutineCensus struct{ before map[string]bool }

func newGoroutineCensus() goroutineCensus {
	c := goroutineCensus{before: map[string]bool{}}
	for _, g := range goroutineStacks() {
		c.before[goroutineID(g)] = true
	}
	return c
}

func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutineID is the "goroutine N" of a stack's header line.
func goroutineID(stack string) string {
	id, _, _ := strings.Cut(stack, " [")
	return id
}

func (c goroutineCensus) ours() (int, string) {
	n := 0
	var sb strings.Builder
	for i, g := range goroutineStacks() {
		if i == 0 || strings.Contains(g, "testing.tRunner") || c.before[goroutineID(g)] {
			continue
		}
		if strings.Contains(g, "nichealth/nichealthd/") || strings.Contains(g, "godbus") {
			n++
			sb.WriteString(g + "\n\n")
		}
	}
	return n, sb.String()
}

// settled waits for goroutines that are on their way out.
func (c goroutineCensus) settled(limit int) int {
	n, _ := c.ours()
	for i := 0; i < 100 && n > limit; i++ {
		time.Sleep(20 * time.Millisecond)
		n, _ = c.ours()
	}
	return n
}

// No goroutine leaks across reloads and D-Bus reconnects (issue: race and
// leak checks), and none left once the daemon stops.
func TestDaemon_NoGoroutineLeakAcrossReloadsAndBusRestarts(t *testing.T) {
	census := newGoroutineCensus()
	h := simtest.Build(t, "minimal")
	dir := t.TempDir()
	bus1 := dbustest.Start(t, dbustest.Options{})
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus1.Address)
	cfg := writeConfig(t, h, dir, "")
	d, cancel, done := startDaemon(t, cfg, dir)

	onBus := func(addr string) func() bool {
		return func() bool {
			c, err := dbusapi.Dial(addr)
			if err != nil {
				return false
			}
			defer c.Close()
			_, err = c.Manager(context.Background())
			return err == nil
		}
	}
	waitFor(t, "API on the first bus", onBus(bus1.Address))
	for i := 0; i < 3; i++ {
		if err := d.RequestReload(); err != nil {
			t.Fatal(err)
		}
	}
	running := census.settled(0)
	for i := 0; i < 20; i++ {
		if err := d.RequestReload(); err != nil {
			t.Fatal(err)
		}
	}
	if n := census.settled(running); n > running+2 {
		t.Fatalf("goroutines grew across 20 reloads: %d -> %d", running, n)
	}

	// The system bus restarts (a new dbus-daemon): the API comes back.
	bus2 := dbustest.Start(t, dbustest.Options{})
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus2.Address)
	exec.Command("pkill", "-f", filepath.Join(bus1.Dir, "bus.conf")).Run()
	waitFor(t, "API on the restarted bus", onBus(bus2.Address))
	if n := census.settled(running); n > running+2 {
		t.Fatalf("goroutines grew across a bus reconnect: %d -> %d", running, n)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := census.settled(0); n > 0 {
		_, stacks := census.ours()
		t.Fatalf("goroutines left after stop: %d\n%s", n, stacks)
	}
}

// A refused reload keeps the running configuration and reports why.
func TestDaemon_RefusedReloadKeepsRunningConfig(t *testing.T) {
	h := simtest.Build(t, "minimal")
	dir := t.TempDir()
	cfg := writeConfig(t, h, dir, "[dbus]\nenabled = false\n")
	d, cancel, done := startDaemon(t, cfg, dir)
	defer func() { cancel(); <-done }()
	orig, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(orig, []byte("\n[[counterDetection.counters]]\nname = \"symbol_error\"\nvelocityUnit = \"fortnight\"\n")...), 0o644)
	err := d.RequestReload()
	if err == nil || !strings.Contains(err.Error(), "fortnight") {
		t.Fatalf("reload error %v", err)
	}
	d.mu.Lock()
	gen, reloadErr := d.generation, d.reloadErr
	d.mu.Unlock()
	if gen != 1 || !strings.Contains(reloadErr, "velocityUnit") {
		t.Fatalf("generation %d, last error %q", gen, reloadErr)
	}
}

func TestDaemon_MetricsEndpointFollowsReload(t *testing.T) {
	h := simtest.Build(t, "minimal")
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, h, dir, fmt.Sprintf("metricsAddress = %q\n[dbus]\nenabled = false\n", addr))
	d, cancel, done := startDaemon(t, cfg, dir)
	defer func() { cancel(); <-done }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "metrics", func() bool {
		code, body := get("/metrics")
		return code == 200 && strings.Contains(body, `nichealth_port_healthy{device="mlx5_0"`)
	})
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	// Switched off by a reload.
	os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "metricsAddress", "# metricsAddress", 1)), 0o644)
	if err := d.RequestReload(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/metrics"); code != 0 {
		t.Fatalf("endpoint still up after it was removed from the config: %d", code)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
