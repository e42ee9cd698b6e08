package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/localbus"
	"github.com/nichealth/nichealthd/topology/sim"
)

// node is one simulated host with a running daemon (and its private bus).
type node struct {
	dir      string
	h        *sim.Host
	interval time.Duration
	events   string // the JSON-lines sink file
	logPath  string
	busAddr  string // "" when D-Bus is off
	metrics  string // host:port of the metrics endpoint, "" when off
	bus      *localbus.Bus
	daemon   *exec.Cmd
	logf     *os.File
}

type nodeOptions struct {
	daemonBin string
	shape     string
	interval  time.Duration
	dbus      bool
	metrics   bool // serve metrics on a free loopback port (rss counts polls there)
	dir       string
}

// renderConfig is the daemon's configuration for a simulated host: every
// path points into the tree, events go to a JSON-lines file, and the
// journal sink is off so a run on a machine with journald leaves nothing in
// its journal.
func renderConfig(h *sim.Host, interval time.Duration, events string, dbus bool, metrics string) string {
	return fmt.Sprintf(`sysfsRoot = %q
procfsRoot = %q
devRoot = %q
metadataPath = %q
nodeName = "latency-node"
pollingInterval = %q
metricsAddress = %q
[sinks.jsonl]
path = %q
[sinks.journal]
enabled = false
[dbus]
enabled = %v
`, h.SysRoot(), h.ProcRoot(), h.DevRoot(), h.MetadataPath(), interval.String(), metrics, events, dbus)
}

// freeLoopbackPort finds a TCP port nobody listens on. Another process
// could take it before the daemon binds it; the daemon then fails to
// start with a message naming the address, and a rerun picks another.
func freeLoopbackPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port for the metrics endpoint: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// startNode builds the host, the bus and the daemon:
//   - (n, nil): the daemon is running; call n.stop;
//   - (n, err): something failed after the directory was made; n.stop
//     still cleans up what was started;
//   - (nil, err): nothing was started.
func startNode(o nodeOptions) (*node, error) {
	if _, err := os.Stat(o.daemonBin); err != nil {
		return nil, fmt.Errorf("daemon binary %s: %w (build it with `make build`, or pass --daemon)", o.daemonBin, err)
	}
	bin, err := filepath.Abs(o.daemonBin)
	if err != nil {
		return nil, err
	}
	n := &node{dir: o.dir, interval: o.interval}
	n.h, err = sim.Build(filepath.Join(o.dir, "host"), o.shape)
	if err != nil {
		return n, err
	}
	if o.dbus {
		if err := n.startBus(); err != nil {
			return n, fmt.Errorf("private D-Bus: %w (run with --dbus=false to measure the JSON-lines sink only)", err)
		}
	}
	if o.metrics {
		if n.metrics, err = freeLoopbackPort(); err != nil {
			return n, err
		}
	}
	n.events = filepath.Join(o.dir, "events.jsonl")
	cfg := filepath.Join(o.dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(renderConfig(n.h, o.interval, n.events, o.dbus, n.metrics)), 0o644); err != nil {
		return n, err
	}
	if err := os.MkdirAll(filepath.Join(o.dir, "state"), 0o755); err != nil {
		return n, err
	}
	n.logPath = filepath.Join(o.dir, "nichealthd.log")
	if n.logf, err = os.Create(n.logPath); err != nil {
		return n, err
	}
	n.daemon = exec.Command(bin, "--config", cfg, "--state-file", filepath.Join(o.dir, "state", "state.json"))
	n.daemon.Env = daemonEnv(os.Environ(), n.busAddr)
	n.daemon.Stdout, n.daemon.Stderr = n.logf, n.logf
	if err := n.daemon.Start(); err != nil {
		n.daemon = nil
		return n, fmt.Errorf("start %s: %w", bin, err)
	}
	return n, nil
}

// daemonEnv drops what would tie the daemon to the caller's service
// manager (a NOTIFY_SOCKET inherited from a unit would make it report to
// systemd as if it were the unit) and points it at the private bus.
func daemonEnv(env []string, busAddr string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		switch k {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "DBUS_SYSTEM_BUS_ADDRESS":
			continue
		}
		out = append(out, e)
	}
	if busAddr != "" {
		out = append(out, "DBUS_SYSTEM_BUS_ADDRESS="+busAddr)
	}
	return out
}

// startBus runs a private bus whose policy lets this user own the daemon's
// name, so nothing on the host is configured.
func (n *node) startBus() error {
	b, err := localbus.Start(n.dir)
	if err != nil {
		return err
	}
	n.bus, n.busAddr = b, b.Address
	return nil
}

// waitReady returns once the daemon's first poll has reached the
// JSON-lines file (the baseline events) and, with D-Bus on, the Manager
// object says Ready.
func (n *node) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := n.alive(); err != nil {
			return err
		}
		if st, err := os.Stat(n.events); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no event in %s within %v: the first poll did not complete (see %s)", n.events, timeout, n.logPath)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n.busAddr == "" {
		return nil
	}
	c, err := dbusapi.Dial(n.busAddr)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		mv, err := c.Manager(cctx)
		cancel()
		if err == nil && mv.Ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon not ready on D-Bus %s within %v: %v (see %s)", n.busAddr, timeout, err, n.logPath)
		}
		if err := n.alive(); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive fails when the daemon has exited (its log says why).
func (n *node) alive() error {
	if n.daemon == nil || n.daemon.Process == nil {
		return errors.New("daemon not started")
	}
	if err := n.daemon.Process.Signal(syscall.Signal(0)); err != nil {
		return fmt.Errorf("nichealthd exited: %s", n.lastLog())
	}
	return nil
}

// lastLog is the daemon's last log line, for error messages.
func (n *node) lastLog() string {
	f, err := os.Open(n.logPath)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	if last == "" {
		return "(empty log " + n.logPath + ")"
	}
	return last
}

// stop ends the daemon (SIGTERM, then SIGKILL after 10 s) and the bus.
func (n *node) stop() {
	if n == nil {
		return
	}
	if n.daemon != nil && n.daemon.Process != nil {
		n.daemon.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { n.daemon.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			n.daemon.Process.Kill()
			<-done
		}
	}
	if n.bus != nil {
		n.bus.Stop()
	}
	if n.logf != nil {
		n.logf.Close()
	}
}
