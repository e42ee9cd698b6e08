package main

// DESIGN.md difference 17 seen from outside: the built nichealthd on a
// simulated host, stopped with SIGTERM (or still alive with its bus out
// of reach), and the built nichealthctl check judging without it.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/internal/component"
	"github.com/nichealth/nichealthd/internal/syncbuf"
	"github.com/nichealth/nichealthd/topology/sim"
)

var (
	daemonOnce sync.Once
	daemonPath string
	daemonErr  error
)

// daemonBinary builds nichealthd once, beside the nichealthctl under test.
func daemonBinary(t *testing.T) string {
	t.Helper()
	daemonOnce.Do(func() {
		daemonPath = filepath.Join(filepath.Dir(ctlBin), "nichealthd")
		if out, err := exec.Command("go", "build", "-o", daemonPath, "../nichealthd").CombinedOutput(); err != nil {
			daemonErr = fmt.Errorf("build nichealthd: %v\n%s", err, out)
		}
	})
	if daemonErr != nil {
		t.Fatal(daemonErr)
	}
	return daemonPath
}

// daemonNode is the real daemon on a simulated dgx-h100, its state file
// where nichealthd.service keeps it relative to its directory, and a
// private system bus (nil: [dbus] enabled = false).
type daemonNode struct {
	t      *testing.T
	h      *sim.Host
	cfg    string
	state  string
	bus    *dbustest.Bus
	cmd    *exec.Cmd
	stderr syncbuf.Buffer
}

// newDaemonNode writes the daemon's configuration: a card may lack a port
// for 4 minutes (the longest hold allowed) before it is fatal, so a port
// put in INIT is inside its hold for the whole test; no expected compute
// port count, so a card taken away is judged by itself.
func newDaemonNode(t *testing.T, withBus bool) *daemonNode {
	t.Helper()
	h := simHost(t, "dgx-h100")
	dir := t.TempDir()
	n := &daemonNode{t: t, h: h, cfg: filepath.Join(dir, "config.toml"), state: filepath.Join(dir, "state", "state.json")}
	if withBus {
		n.bus = dbustest.Start(t, dbustest.Options{})
	}
	cfg := fmt.Sprintf(`sysfsRoot = %q
procfsRoot = %q
devRoot = %q
metadataPath = %q
readTimeout = "2s"
cardAnomalyHold = "4m"
[inventory]
expectedComputePorts = 0
[sinks.jsonl]
path = %q
[sinks.journal]
enabled = false
[dbus]
enabled = %v
`, h.SysRoot(), h.ProcRoot(), h.DevRoot(), h.MetadataPath(), filepath.Join(dir, "events.jsonl"), withBus)
	must(t, os.WriteFile(n.cfg, []byte(cfg), 0o644))
	must(t, os.MkdirAll(filepath.Dir(n.state), 0o750))
	return n
}

func (n *daemonNode) start() {
	n.t.Helper()
	n.cmd = exec.Command(daemonBinary(n.t), "--config", n.cfg, "--state-file", n.state, "--node-name", "down-node",
		"--state-polling-interval", "100ms")
	n.cmd.Env = os.Environ()
	if n.bus != nil {
		n.cmd.Env = append(n.cmd.Env, "DBUS_SYSTEM_BUS_ADDRESS="+n.bus.Address)
	}
	n.cmd.Stderr = &n.stderr
	must(n.t, n.cmd.Start())
	cmd := n.cmd
	n.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// stop is SIGTERM, as systemctl stop sends it: the daemon saves its state
// and exits 0.
func (n *daemonNode) stop() {
	n.t.Helper()
	must(n.t, n.cmd.Process.Signal(syscall.SIGTERM))
	if err := n.cmd.Wait(); err != nil {
		n.t.Fatalf("nichealthd after SIGTERM: %v\n%s", err, n.stderr.String())
	}
}

// check runs the built nichealthctl check with the daemon's configuration
// and state file, on bus (an address), and decodes its --json answer; the
// plain plugin output is taken from a second run, as Nagios would see it.
func (n *daemonNode) check(bus string) (checkResult, string, int) {
	n.t.Helper()
	args := []string{"check", "--config", n.cfg, "--state-file", n.state, "--bus-address", bus}
	out, errs, code := ctl(n.t, nil, nil, append(args, "--json")...)
	var res checkResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		n.t.Fatalf("check --json: %v\n%s%s", err, out, errs)
	}
	plain, _, code2 := ctl(n.t, nil, nil, args...)
	if code2 != code {
		n.t.Fatalf("check exits %d, with --json %d", code2, code)
	}
	return res, plain, code
}

// awaitDaemon polls the daemon's own verdict (check over the bus) until
// ok accepts it.
func (n *daemonNode) awaitDaemon(what string, ok func(r checkResult) bool) checkResult {
	n.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last checkResult
	for time.Now().Before(deadline) {
		args := []string{"check", "--json", "--config", n.cfg, "--state-file", n.state, "--bus-address", n.bus.Address}
		out, _, _ := ctl(n.t, nil, nil, args...)
		if json.Unmarshal([]byte(out), &last) == nil && last.Source == "daemon" && ok(last) {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	n.t.Fatalf("the daemon never said %s; last answer %q\ndaemon log:\n%s", what, last.Output, n.stderr.String())
	return last
}

// entry finds a line of the verdict by its name.
func entry(r checkResult, name string) (checkEntry, bool) {
	for _, e := range r.Ports {
		if e.Name == name {
			return e, true
		}
	}
	return checkEntry{}, false
}

func entryIs(r checkResult, name string, st nagiosStatus, reason string) bool {
	e, ok := entry(r, name)
	return ok && e.Status == st && strings.Contains(strings.Join(e.Reasons, " - "), reason)
}

// sameVerdict says how two verdicts differ, entry by entry (state and
// reasons), or "" when they agree.
func sameVerdict(want, got checkResult) string {
	var diffs []string
	names := map[string]bool{}
	for _, e := range append(slices.Clone(want.Ports), got.Ports...) {
		names[e.Name] = true
	}
	for name := range names {
		w, wok := entry(want, name)
		g, gok := entry(got, name)
		switch {
		case !wok || !gok:
			diffs = append(diffs, fmt.Sprintf("%s only in one (daemon %v, check %v)", name, wok, gok))
		case w.Status != g.Status || !slices.Equal(w.Reasons, g.Reasons):
			diffs = append(diffs, fmt.Sprintf("%s: daemon %s %q, check %s %q", name, w.Status, w.Reasons, g.Status, g.Reasons))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// dirState is every file under dir with its mode, size, time and content
// hash: what a reader must leave as it found it.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		out[p] = fmt.Sprintf("%v %d %d %s", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func unchanged(t *testing.T, before map[string]string, dir string) {
	t.Helper()
	after := dirState(t, dir)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("nichealthctl check changed %s: %q -> %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("nichealthctl check created %s", p)
		}
	}
}

const noBus = "unix:path=/nonexistent/system_bus_socket"

// TestDesign_17_DaemonDownKeepsItsVerdict: with a latched link_downed
// (fatal), a NIC gone from the bus and a port in INIT inside its card's
// hold, the check gives the daemon's verdict with the daemon alive but its
// bus out of reach, with the daemon stopped (bus up or not), and the
// daemon restarted on the same boot says the same; the first line says
// the daemon is not running, the result is never better than WARNING, and
// nothing in the state directory is touched.
func TestDesign_17_DaemonDownKeepsItsVerdict(t *testing.T) {
	n := newDaemonNode(t, true)
	n.start()
	n.awaitDaemon("12 healthy ports", func(r checkResult) bool { return r.Status == nagiosOK && len(r.Ports) == 12 })

	must(t, n.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1))
	must(t, n.h.SetPortState("mlx5_3", 1, "INIT", "LinkUp"))
	dev6, _ := n.h.Device("mlx5_6")
	must(t, n.h.RemoveDevice("mlx5_6"))
	dev1, _ := n.h.Device("mlx5_1")
	dev3, _ := n.h.Device("mlx5_3")
	name1, name3 := "mlx5_1-"+dev1.NetDev, "mlx5_3-"+dev3.NetDev
	// The NIC gone is listed CRITICAL under its device or its PCI
	// address, whichever condition the daemon holds for it.
	goneListed := func(r checkResult) bool {
		for _, e := range r.Ports {
			if (strings.HasPrefix(e.Name, "mlx5_6-") || e.Name == dev6.PCIAddress) && e.Status == nagiosCritical {
				return true
			}
		}
		return false
	}
	up := n.awaitDaemon("the latch, the INIT port and the missing NIC", func(r checkResult) bool {
		return entryIs(r, name1, nagiosCritical, "link_downed") && entryIs(r, name3, nagiosWarning, "INIT") && goneListed(r)
	})
	// With the daemon up nothing changes: its own verdict, nothing said
	// before it.
	if up.Status != nagiosCritical || up.Daemon != "" || up.State != nil || !strings.HasPrefix(up.Output, "CRITICAL - 2 of ") {
		t.Fatalf("with the daemon up: %+v", up)
	}
	stateDir := filepath.Dir(n.state)
	// "2 of 12 ports fatal, 1 degraded": what every answer below says after
	// why the daemon did not.
	summary, _, _ := strings.Cut(strings.TrimPrefix(up.Output, "CRITICAL - "), ": ")

	// The daemon alive, its bus out of reach: judged from its state file,
	// which it keeps saving, and it is said to be running.
	alive, plain, code := n.check(noBus)
	wantFirst := regexp.MustCompile(`^CRITICAL - nichealthd \(pid \d+\) is running but the system bus is unreachable \(verdict from its state file ` +
		regexp.QuoteMeta(n.state) + `, saved [0-9hms.]+ ago, and sysfs, as at its restart\); ` + regexp.QuoteMeta(summary) + `: `)
	if code != 2 || alive.Source != "state" || !wantFirst.MatchString(plain) {
		t.Errorf("daemon alive, bus unreachable: exit %d source %q\n%s", code, alive.Source, plain)
	}
	if d := sameVerdict(up, alive); d != "" {
		t.Errorf("daemon alive, bus unreachable: the check and the daemon disagree:\n%s", d)
	}

	n.stop()
	before := dirState(t, stateDir)
	for _, c := range []struct {
		name, bus, first string
	}{
		{"daemon stopped", n.bus.Address, "CRITICAL - nichealthd is not running (verdict from its state file "},
		{"daemon stopped, bus unreachable", noBus, "CRITICAL - nichealthd is not running and the system bus is unreachable (verdict from its state file "},
	} {
		down, plain, code := n.check(c.bus)
		first, _, _ := strings.Cut(plain, "\n")
		if code != 2 || down.Source != "state" || down.State == nil || down.State.Status != "this boot" || !strings.HasPrefix(first, c.first) ||
			!strings.Contains(first, "); "+summary+": ") || len(first) > 1024 {
			t.Errorf("%s: exit %d %+v\n%s", c.name, code, down.State, plain)
		}
		// The three verdicts, by name: the latch stays CRITICAL,
		// the port in INIT inside its hold is WARNING, the NIC gone is
		// listed.
		if !entryIs(down, name1, nagiosCritical, "link_downed") || !entryIs(down, name3, nagiosWarning, "INIT") || !goneListed(down) {
			t.Errorf("%s: verdicts %s", c.name, down.Output)
		}
		if d := sameVerdict(up, down); d != "" {
			t.Errorf("%s: the check and the daemon disagree:\n%s", c.name, d)
		}
	}
	unchanged(t, before, stateDir)

	// The daemon back on the same boot says what the check said.
	n.start()
	again := n.awaitDaemon("its verdict after the restart", func(r checkResult) bool { return r.Status == nagiosCritical })
	if d := sameVerdict(again, alive); d != "" {
		t.Errorf("the restarted daemon and the check disagree:\n%s", d)
	}
	n.stop()
}

// TestDesign_17_DaemonDownAfterRebootKnowsTheNICGone: after a reboot the
// state is cleared (counters restarted from zero, so a latch of the last
// boot is gone) but the expected inventory is not: a NIC present last
// boot and absent now is CRITICAL at once, as the daemon says at its first
// poll.
func TestDesign_17_DaemonDownAfterRebootKnowsTheNICGone(t *testing.T) {
	n := newDaemonNode(t, true)
	n.start()
	n.awaitDaemon("12 healthy ports", func(r checkResult) bool { return r.Status == nagiosOK && len(r.Ports) == 12 })
	must(t, n.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1))
	dev1, _ := n.h.Device("mlx5_1")
	n.awaitDaemon("the latch", func(r checkResult) bool { return entryIs(r, "mlx5_1-"+dev1.NetDev, nagiosCritical, "link_downed") })
	n.stop()
	if _, err := os.Stat(filepath.Join(filepath.Dir(n.state), "inventory.json")); err != nil {
		t.Fatalf("the daemon kept no expected inventory: %v", err)
	}

	dev6, _ := n.h.Device("mlx5_6")
	must(t, n.h.RemoveDevice("mlx5_6"))
	_, err := n.h.NewBootID()
	must(t, err)
	must(t, n.h.ResetCounters("mlx5_1", 1))
	before := dirState(t, filepath.Dir(n.state))
	down, plain, code := n.check(noBus)
	unchanged(t, before, filepath.Dir(n.state))
	first, _, _ := strings.Cut(plain, "\n")
	want := "CRITICAL - nichealthd is not running and the system bus is unreachable (its state file " + n.state +
		" is from an earlier boot: verdict from sysfs and the expected NIC inventory, as at a first start after a reboot); 11 of 11 ports healthy; 1 node condition fatal: " + dev6.PCIAddress + ":CRITICAL - "
	if code != 2 || down.Source != "sysfs" || !strings.HasPrefix(first, want) || !strings.Contains(first, "present last boot, absent now") {
		t.Errorf("exit %d source %s\n got %s\nwant %s...", code, down.Source, first, want)
	}
	if !entryIs(down, "mlx5_1-"+dev1.NetDev, nagiosOK, "") {
		t.Errorf("the latch of the earlier boot survived the reboot:\n%s", plain)
	}

	n.start()
	daemon := n.awaitDaemon("the NIC gone", func(r checkResult) bool { return entryIs(r, dev6.PCIAddress, nagiosCritical, "absent now") })
	if d := sameVerdict(daemon, down); d != "" {
		t.Errorf("the daemon after the reboot and the check disagree:\n%s", d)
	}
	n.stop()
}

// TestDesign_17_DaemonAliveWithoutBus: a daemon that runs with [dbus]
// enabled = false is not said to be down; the check judges from its state
// file and says why it could not ask.
func TestDesign_17_DaemonAliveWithoutBus(t *testing.T) {
	n := newDaemonNode(t, false)
	bus := dbustest.Start(t, dbustest.Options{})
	n.start()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if b, err := os.ReadFile(n.state); err == nil && bytes.Contains(b, []byte(`"counters"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never saved its state\n%s", n.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, plain, code := n.check(bus.Address)
	if code != 1 || res.Source != "state" || !regexp.MustCompile(`^WARNING - nichealthd \(pid \d+\) is running but not on the system bus \(verdict from its state file `).MatchString(plain) ||
		!strings.Contains(plain, "; 12 of 12 ports healthy\n") {
		t.Errorf("exit %d source %s\n%s", code, res.Source, plain)
	}
	n.stop()
	_, plain, code = n.check(bus.Address)
	if code != 1 || !strings.HasPrefix(plain, "WARNING - nichealthd is not running (verdict from its state file ") {
		t.Errorf("stopped: exit %d\n%s", code, plain)
	}
}

// TestDesign_17_StateFileMissingOrUnusableIsSaid: with the daemon down, a
// state file that is missing, corrupt, from a newer nichealthd or without
// a boot ID is named on the first line, the verdict is sysfs's as at a
// first start, the result at least WARNING, and the file stays as it was
// (not moved aside as the daemon's own loader does).
func TestDesign_17_StateFileMissingOrUnusableIsSaid(t *testing.T) {
	h := simHost(t, "minimal")
	cfg := writeConfig(t, "sysfsRoot = \""+h.SysRoot()+"\"\nprocfsRoot = \""+h.ProcRoot()+"\"\ndevRoot = \""+h.DevRoot()+
		"\"\nmetadataPath = \""+h.MetadataPath()+"\"\n")
	cases := []struct {
		name, content, says string
	}{
		{"missing", "", " is missing: verdict from sysfs as at a first start); 1 of 1 ports healthy"},
		{"corrupt", "{\"version\": 2, \"boot_id\": ", " is unusable (invalid JSON: "},
		{"newer", `{"version": 99}`, " is unusable (state file "},
		{"no boot ID", `{"version": 2, "checks": {}}`, " is unusable (it has no boot ID): verdict from sysfs as at a first start); 1 of 1 ports healthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state.json")
			if c.content != "" {
				must(t, os.WriteFile(state, []byte(c.content), 0o600))
			}
			before := dirState(t, dir)
			out, errs, code := ctl(t, nil, nil, "check", "--config", cfg, "--state-file", state, "--bus-address", noBus)
			unchanged(t, before, dir)
			want := "WARNING - nichealthd is not running and the system bus is unreachable (its state file " + state
			if code != 1 || !strings.HasPrefix(out, want) || !strings.Contains(strings.SplitN(out, "\n", 2)[0], c.says) {
				t.Errorf("exit %d\n%s%s", code, out, errs)
			}
		})
	}
	// An unusable expected inventory is said, and left where it is (the
	// daemon's own loader sets it aside).
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "inventory.json"), []byte("garbage"), 0o600))
	before := dirState(t, dir)
	_, errs, code := ctl(t, nil, nil, "check", "--config", cfg, "--state-file", filepath.Join(dir, "state.json"), "--bus-address", noBus)
	unchanged(t, before, dir)
	if code != 1 || !strings.Contains(errs, "expected NIC inventory "+filepath.Join(dir, "inventory.json")+" is unusable, so a NIC missing since the last boot cannot be recognised") {
		t.Errorf("unusable inventory: exit %d\n%s", code, errs)
	}

	// Asked for explicitly with --offline, an unusable state file is said
	// the same way; without --state-file, --offline reads none.
	state := filepath.Join(t.TempDir(), "state.json")
	must(t, os.WriteFile(state, []byte("garbage"), 0o600))
	out, _, code := ctl(t, nil, nil, "check", "--offline", "--config", cfg, "--state-file", state)
	if code != 1 || !strings.HasPrefix(out, "WARNING - state file "+state+" is unusable (file is not a JSON object): verdict from sysfs as at a first start; 1 of 1 ports healthy") {
		t.Errorf("--offline --state-file: exit %d\n%s", code, out)
	}
	if out, _, code := ctl(t, nil, nil, "check", "--offline", "--config", cfg); code != 0 || !strings.HasPrefix(out, "OK - 1 of 1 ports healthy") {
		t.Errorf("--offline: exit %d\n%s", code, out)
	}
}

// wait-ready on the real daemon: a latched non-fatal breach (a burst of
// symbol errors) does not hold the gate and is listed when it opens; a
// latched link_downed holds it, says how to open it, and the gate opens
// once the breach is acknowledged.
func TestWaitReady_RealDaemonLatches(t *testing.T) {
	n := newDaemonNode(t, true)
	n.start()
	n.awaitDaemon("12 healthy ports", func(r checkResult) bool { return r.Status == nagiosOK && len(r.Ports) == 12 })
	dev0, _ := n.h.Device("mlx5_0")
	dev1, _ := n.h.Device("mlx5_1")
	must(t, n.h.AddCounter("mlx5_0", 1, "counters/symbol_error", 5000))
	n.awaitDaemon("the symbol_error latch", func(r checkResult) bool {
		return entryIs(r, "mlx5_0-"+dev0.NetDev, nagiosWarning, "symbol_error")
	})
	out, errs, code := ctl(t, nil, nil, "wait-ready", "--timeout", "60s", "--bus-address", n.bus.Address)
	if code != exitOK || out != "" || !strings.Contains(errs, "ready; not waited for") || !strings.Contains(errs, "  mlx5_0/1: Port mlx5_0 port 1: symbol_error") {
		t.Fatalf("a non-fatal latch: exit %d\n%s", code, errs)
	}

	must(t, n.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1))
	n.awaitDaemon("the link_downed latch", func(r checkResult) bool {
		return entryIs(r, "mlx5_1-"+dev1.NetDev, nagiosCritical, "link_downed")
	})
	_, errs, code = ctl(t, nil, nil, "wait-ready", "--timeout", "1s", "--bus-address", n.bus.Address)
	if code != exitFailed || !strings.Contains(errs, "  Port mlx5_1 port 1: link_downed") ||
		!strings.Contains(errs, "(held until acknowledged: once remediated, nichealthctl ack mlx5_1 1 link_downed)") {
		t.Fatalf("a fatal latch: exit %d\n%s", code, errs)
	}
	if out, errs, code := ctl(t, nil, nil, "ack", "mlx5_1", "1", "link_downed", "--bus-address", n.bus.Address); code != exitOK {
		t.Fatalf("ack: exit %d %s%s", code, out, errs)
	}
	if _, errs, code := ctl(t, nil, nil, "wait-ready", "--timeout", "60s", "--bus-address", n.bus.Address); code != exitOK {
		t.Fatalf("after the acknowledgement: exit %d\n%s", code, errs)
	}
	n.stop()
}

// Run by a user who cannot enter the daemon's state directory (NRPE's
// nagios, here nobody), the check says it cannot read the state file and
// how to fix that, and judges sysfs as at a first start.
func TestDesign_17_StateFileUnreadableSaysHowToFix(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		component.Missing(t, "setpriv not installed")
	}
	if os.Geteuid() != 0 {
		component.Missing(t, "running nichealthctl as another user needs root")
	}
	h := simHost(t, "minimal")
	// The host tree readable by everyone, as /sys is.
	for d := h.Root; d != "/" && d != filepath.Dir(d); d = filepath.Dir(d) {
		if strings.HasPrefix(d, os.TempDir()) || strings.HasPrefix(d, "/dev/shm/") {
			must(t, os.Chmod(d, 0o755))
		}
	}
	cfgDir, err := os.MkdirTemp("", "nh17-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(cfgDir) })
	must(t, os.Chmod(cfgDir, 0o755))
	cfg := filepath.Join(cfgDir, "config.toml")
	must(t, os.WriteFile(cfg, []byte("sysfsRoot = \""+h.SysRoot()+"\"\nprocfsRoot = \""+h.ProcRoot()+"\"\ndevRoot = \""+h.DevRoot()+
		"\"\nmetadataPath = \""+h.MetadataPath()+"\"\n"), 0o644))
	stateDir := filepath.Join(cfgDir, "state")
	must(t, os.Mkdir(stateDir, 0o750))
	state := filepath.Join(stateDir, "state.json")
	must(t, os.WriteFile(state, []byte(`{"version":2}`), 0o600))
	out, errs, code := ctl(t, nil, []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"},
		"check", "--config", cfg, "--state-file", state, "--bus-address", noBus)
	want := "WARNING - nichealthd cannot be reached: the system bus is unreachable (cannot read its state file " + state +
		" (permission denied: run the check as root or as nichealthd): verdict from sysfs as at a first start); 1 of 1 ports healthy"
	if code != 1 || !strings.HasPrefix(out, want) {
		t.Errorf("exit %d\n got %s\nwant %s\n%s", code, out, want, errs)
	}
}
