package main

import (
	"github.com/nichealth/nichealthd/dbusapi/localbus"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/topology/sim"
)

type tryOptions struct {
	bin, shape, dir, policy, metricsAddr string
	interval                             time.Duration
}

// pidFileName lists what --keep started, one "PID NAME" per line, daemon
// first: --stop ends them in that order.
const pidFileName = "try.pid"

// ownerPolicy lets the invoking user own the name: on a host only the
// nichealthd user and root may, and here the daemon runs as whoever typed
// make try.
const ownerPolicy = `<busconfig>
  <policy user="%s">
    <allow own="org.nichealth.NicHealth1"/>
  </policy>
</busconfig>
`

// sudoShim keeps the try node's bus for sudo'd commands: sudo resets the
// environment, which would send nichealthctl to the host's own bus.
const sudoShim = `#!/bin/sh
# sudo for the nichealthd try-it node (make try): keeps DBUS_SYSTEM_BUS_ADDRESS
# and PATH, which sudo would reset, so "sudo nichealthctl ..." reaches this node.
if [ "$(id -u)" = 0 ]; then exec "$@"; fi
exec %s env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_SYSTEM_BUS_ADDRESS" PATH="$PATH" "$@"
`

func startTry(w io.Writer, o tryOptions) error {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if procs, err := readPidFile(dir); err == nil && len(alive(procs)) == len(procs) {
		fmt.Fprintf(w, "A try-it node is already running in %s (make try-stop ends it), metrics on %s.\n\n", dir, readMetricsAddr(dir))
		printExports(w, dir, bin)
		return nil
	} else if err == nil {
		fmt.Fprintf(w, "Cleaning up a half-stopped try-it node in %s.\n", dir)
		if err := stopTry(io.Discard, dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		return fmt.Errorf("%s is not empty and holds no running try-it node: remove it or pass --dir", dir)
	}
	ok := false
	defer func() {
		if !ok {
			_ = stopTry(io.Discard, dir)
		}
	}()
	h, err := sim.Build(filepath.Join(dir, "host"), o.shape)
	if err != nil {
		return err
	}
	busAddr, err := startTryBus(dir, o.policy)
	if err != nil {
		return err
	}
	metricsAddr, metricsNote := chooseMetricsAddr(o.metricsAddr)
	cfg := daemonConfig{interval: o.interval, jsonl: filepath.Join(dir, "events.jsonl"), dbus: true, metricsAddr: metricsAddr}
	lab, farEnd, noFabric := startTryFabric(h, bin, dir)
	if lab != nil {
		defer lab.Close()
		cfg.farEnd = farEnd
	}
	if err := writeConfig(filepath.Join(dir, "config.toml"), h, "try-node", cfg); err != nil {
		return err
	}
	cmd, err := daemonCommand(bin, dir, busAddr)
	if err != nil {
		return err
	}
	if lab != nil {
		// nichealth-mad, the daemon's child, speaks MADs as the lab's
		// gpu-a017 (umad2sim writes its view of sysfs into the working
		// directory); nichealthd itself is static Go, untouched by the
		// preload.
		cmd.Env, cmd.Dir = append(cmd.Env, lab.Vars(iblab.GPUA017)...), lab.Dir
	}
	if err := startDetached(cmd, dir, "nichealthd"); err != nil {
		return err
	}
	if err := writeSudoShim(dir); err != nil {
		return err
	}
	c, err := waitTryReady(busAddr, dir)
	if err != nil {
		return err
	}
	defer c.Close()
	bound, err := boundMetricsAddr(filepath.Join(dir, "nichealthd.log"), 10*time.Second)
	if err != nil {
		if o.metricsAddr != "" {
			return fmt.Errorf("%w (METRICS=%s: pass a free host:port, or leave METRICS unset for a free one)", err, o.metricsAddr)
		}
		return err
	}
	if err := writeMetricsAddr(dir, bound); err != nil {
		return err
	}
	if err := tryHistory(c, h); err != nil {
		return err
	}
	ok = true
	if metricsNote != "" {
		fmt.Fprintf(w, "Note: %s.\n", metricsNote)
	}
	fmt.Fprintf(w, `A simulated %s node is running in %s:
  a private system bus with the project's D-Bus policy (packaging/dbus), and
  nichealthd on it with metrics on http://%s/metrics, polling every %v.
mlx5_3 port 1 had its cable pulled and reseated: its link_downed breach stays latched
until acknowledged. Paste these lines into your shell, then try the commands of
docs/operating.md (systemctl and journalctl need a real installation):

`, o.shape, dir, bound, o.interval)
	printExports(w, dir, bin)
	printFabric(w, lab != nil, noFabric, bound)
	fmt.Fprintf(w, `
More faults: nichealth-sim port-state --root "$NICHEALTH_SIM_ROOT" mlx5_0 1 DOWN Disabled
             (nichealth-sim --help lists them all)
Daemon log: %s   events: %s
Stop it:    make try-stop
`, filepath.Join(dir, "nichealthd.log"), filepath.Join(dir, "events.jsonl"))
	return nil
}

func printExports(w io.Writer, dir, bin string) {
	fmt.Fprintf(w, "export DBUS_SYSTEM_BUS_ADDRESS=unix:path=%s\n", filepath.Join(dir, "bus.sock"))
	fmt.Fprintf(w, "export PATH=\"%s:%s:$PATH\"\n", filepath.Join(dir, "bin"), bin)
	fmt.Fprintf(w, "export NICHEALTH_SIM_ROOT=%s\n", filepath.Join(dir, "host"))
}

// startTryBus runs dbus-daemon with the project's policy and returns its
// address once the socket exists.
func startTryBus(dir, policy string) (string, error) {
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return "", fmt.Errorf("dbus-daemon not installed (apt-get install dbus): %w", err)
	}
	b, err := os.ReadFile(policy)
	if err != nil {
		return "", fmt.Errorf("read the project's D-Bus policy (run from the repository, or pass --policy): %w", err)
	}
	pdir := filepath.Join(dir, "system.d")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(pdir, filepath.Base(policy)), b, 0o644); err != nil {
		return "", err
	}
	if os.Getuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return "", fmt.Errorf("who am I: %w", err)
		}
		if err := os.WriteFile(filepath.Join(pdir, "zz-try-owner.conf"), []byte(fmt.Sprintf(ownerPolicy, u.Username)), 0o644); err != nil {
			return "", err
		}
	}
	sock := filepath.Join(dir, "bus.sock")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(localbus.Config(sock, localbus.HostPolicy, pdir)), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile")
	if err := startDetached(cmd, dir, "dbus-daemon"); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return "unix:path=" + sock, nil
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "dbus-daemon.log"))
	return "", fmt.Errorf("dbus-daemon did not create %s within 10s: %s", sock, log)
}

// startDetached starts cmd in its own session (so neither make's Ctrl-C
// nor a closed terminal ends it) with its output in dir/NAME.log, and
// records it in the pid file.
func startDetached(cmd *exec.Cmd, dir, name string) error {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	// Not waited for: it outlives this process and is reaped by init.
	_ = cmd.Process.Release()
	return recordProcs(dir, tryProc{pid: pid, name: name})
}

// recordProcs puts procs at the head of the pid file, in their order:
// what starts last (the daemon) is stopped first, before the lab and the
// bus it uses.
func recordProcs(dir string, started ...tryProc) error {
	procs, _ := readPidFile(dir)
	procs = append(started, procs...)
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "%d %s\n", p.pid, p.name)
	}
	return os.WriteFile(filepath.Join(dir, pidFileName), []byte(b.String()), 0o644)
}

func writeSudoShim(dir string) error {
	// Without a real sudo the shim must not call itself through PATH.
	real := `sh -c 'echo "sudo is not installed: run the command as root" >&2; exit 1' sudo`
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if p := filepath.Join(d, "sudo"); d != filepath.Join(dir, "bin") && isExecutable(p) {
			real = p
			break
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bin", "sudo"), []byte(fmt.Sprintf(sudoShim, real)), 0o755)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	return !st.IsDir() && st.Mode()&0o111 != 0
}

// waitTryReady waits for the daemon's first complete poll, as seen on the
// bus; it fails early when the daemon exits.
func waitTryReady(busAddr, dir string) (*dbusapi.Client, error) {
	c, err := dbusapi.Dial(busAddr)
	if err != nil {
		return nil, fmt.Errorf("connect to the try bus: %w", err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := c.Manager(ctx)
		cancel()
		if err == nil && m.Ready {
			return c, nil
		}
		if procs, perr := readPidFile(dir); perr == nil && len(alive(procs)) < len(procs) {
			break
		}
	}
	c.Close()
	log, _ := os.ReadFile(filepath.Join(dir, "nichealthd.log"))
	return nil, fmt.Errorf("nichealthd did not become ready on the try bus; its log:\n%s", log)
}

// tryHistory gives the node something to look at: a pulled and reseated
// cable on mlx5_3 port 1, whose link_downed breach stays latched until an
// operator acknowledges it (docs/operating.md's ack example).
func tryHistory(c *dbusapi.Client, h *sim.Host) error {
	if err := h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		return err
	}
	if err := h.AddCounter("mlx5_3", 1, "counters/link_downed", 1); err != nil {
		return err
	}
	if err := waitPort(c, func(p dbusapi.PortView) bool {
		return !p.Up && slices.Contains(p.LatchedBreaches(), "link_downed")
	}); err != nil {
		return fmt.Errorf("mlx5_3 port 1 pulled: %w", err)
	}
	if err := h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp"); err != nil {
		return err
	}
	if err := waitPort(c, func(p dbusapi.PortView) bool { return p.Up }); err != nil {
		return fmt.Errorf("mlx5_3 port 1 reseated: %w", err)
	}
	return nil
}

func waitPort(c *dbusapi.Client, ok func(dbusapi.PortView) bool) error {
	var last dbusapi.PortView
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p, err := c.Port(ctx, "mlx5_3", 1)
		cancel()
		if err == nil && ok(p) {
			return nil
		}
		last = p
	}
	return fmt.Errorf("the daemon did not report it within 30s (state %q, latched %v)", last.State, last.LatchedBreaches())
}

type tryProc struct {
	pid  int
	name string
}

func readPidFile(dir string) ([]tryProc, error) {
	b, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if err != nil {
		return nil, err
	}
	var procs []tryProc
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 1 {
			continue
		}
		procs = append(procs, tryProc{pid: pid, name: f[1]})
	}
	return procs, nil
}

// running reports whether pid is still the process the pid file names:
// /proc/PID/comm guards against a recycled pid, and a zombie left for a
// slow init counts as gone.
func (p tryProc) running() bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.pid))
	if err != nil || strings.TrimSpace(string(comm)) != p.name {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// isTryDir: only a directory startTry made (or left empty) is removed.
func isTryDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() == "bus.conf" || e.Name() == "host" {
			return true
		}
	}
	return len(entries) == 0
}

func alive(procs []tryProc) []tryProc {
	var out []tryProc
	for _, p := range procs {
		if p.running() {
			out = append(out, p)
		}
	}
	return out
}

// stopTry ends what startTry left in dir (daemon first, so it saves its
// state while its bus is still there) and removes dir.
func stopTry(w io.Writer, dir string) error {
	procs, err := readPidFile(dir)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			fmt.Fprintf(w, "No try-it node in %s.\n", dir)
			return nil
		}
		if !isTryDir(dir) {
			return fmt.Errorf("%s holds no try-it node; not removing it", dir)
		}
	} else if err != nil {
		return err
	}
	for _, p := range procs {
		if !p.running() {
			continue
		}
		if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("stop %s (pid %d): %w", p.name, p.pid, err)
		}
		stopped := false
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !p.running() {
				stopped = true
				break
			}
		}
		if !stopped {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			fmt.Fprintf(w, "%s (pid %d) ignored SIGTERM for 15s; killed it.\n", p.name, p.pid)
		}
		fmt.Fprintf(w, "Stopped %s (pid %d).\n", p.name, p.pid)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	fmt.Fprintf(w, "Removed %s.\n", dir)
	return nil
}
