package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/event"

	"github.com/nichealth/nichealthd/internal/component"
)

// ctlBin is the nichealthctl binary built once for the tests, so exit codes
// and signal handling are those of the real program.
var ctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nichealthctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Reachable by the unprivileged users of the access-control tests.
	_ = os.Chmod(dir, 0o755)
	ctlBin = filepath.Join(dir, "nichealthctl")
	out, err := exec.Command("go", "build", "-o", ctlBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build nichealthctl: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type fixture struct {
	bus *dbustest.Bus
	be  *dbustest.Backend
	srv *dbusapi.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	bus := dbustest.Start(t, dbustest.Options{})
	be := dbustest.NewBackend(dbustest.SampleManager(), dbustest.SamplePorts())
	srv, err := dbusapi.Serve(bus.Connect(t), be, dbusapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &fixture{bus: bus, be: be, srv: srv}
}

func (f *fixture) update(fn func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView)) {
	f.be.Update(fn)
	f.srv.Refresh()
}

// ctl runs nichealthctl against the fixture's bus (through the environment,
// as an operator would) and returns stdout, stderr and the exit code.
func ctl(t *testing.T, bus *dbustest.Bus, prefix []string, args ...string) (string, string, int) {
	t.Helper()
	argv := append(append([]string{}, prefix...), ctlBin)
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if bus != nil {
		cmd.Env = bus.Env()
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	return out.String(), errb.String(), code
}

func TestCtl_Status(t *testing.T) {
	f := newFixture(t)
	out, errs, code := ctl(t, f.bus, nil, "status")
	if code != exitOK || !strings.Contains(out, "nichealthd on gpu-node-1: healthy") ||
		!strings.Contains(out, "3 monitored on 3 NICs; 0 fatal, 0 degraded") ||
		!strings.Contains(out, "/etc/nichealthd/config.toml (generation 1)") || !strings.Contains(out, "(every 1s)") {
		t.Errorf("status: code %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colours on a pipe:\n%q", out)
	}

	f.update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		m.Healthy, m.FatalPorts, m.LastReloadError = false, []string{"mlx5_0/1"}, "config.toml: threshold must be > 0"
		(*ports)[0].Fatal, (*ports)[0].Healthy, (*ports)[0].Verdict = true, false, "fatal"
		(*ports)[1].Healthy = false
	})
	out, errs, code = ctl(t, f.bus, nil, "status")
	if code != exitFailed || !strings.Contains(out, ": fatal - fatal ports: mlx5_0/1; degraded ports: mlx5_1/1") || !strings.Contains(out, "1 fatal, 1 degraded") ||
		!strings.Contains(out, "refused, previous configuration kept: config.toml: threshold must be > 0") {
		t.Errorf("unhealthy status: code %d\n%s%s", code, out, errs)
	}
	out, _, code = ctl(t, f.bus, nil, "status", "--json")
	var st struct {
		NodeName       string   `json:"nodeName"`
		FatalPorts     []string `json:"fatalPorts"`
		FatalPortCount int      `json:"fatalPortCount"`
		Healthy        bool     `json:"healthy"`
		Ports          []struct {
			Device   string `json:"device"`
			Port     int    `json:"port"`
			NodeGUID string `json:"nodeGUID"`
			PortGUID string `json:"portGUID"`
			Verdict  string `json:"verdict"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitFailed || st.NodeName != "gpu-node-1" || st.FatalPortCount != 1 || st.Healthy {
		t.Errorf("status --json: %v code %d %+v\n%s", err, code, st, out)
	}
	// Each port with its GUIDs and verdict: what nichealth-fabric map
	// --status places on the fabric.
	if len(st.Ports) != 3 || st.Ports[0].Device != "mlx5_0" || st.Ports[0].NodeGUID != "0xb83fd20300a0b010" ||
		st.Ports[0].PortGUID != "0xb83fd20300a0b010" || st.Ports[0].Verdict != "fatal" {
		t.Errorf("status --json ports: %+v", st.Ports)
	}
}

func TestCtl_Ports(t *testing.T) {
	f := newFixture(t)
	out, errs, code := ctl(t, f.bus, nil, "ports")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 4 || !strings.HasPrefix(lines[0], "DEVICE") || !strings.Contains(lines[3], "mlx5_bond_0") ||
		!strings.Contains(lines[1], "400 Gb/sec (4X NDR)") {
		t.Errorf("ports: code %d\n%s%s", code, out, errs)
	}
	out, _, code = ctl(t, f.bus, nil, "ports", "--json")
	var ports []dbusapi.PortView
	if err := json.Unmarshal([]byte(out), &ports); err != nil || code != exitOK || len(ports) != 3 || ports[2].Device != "mlx5_bond_0" || len(ports[0].Counters) != 3 {
		t.Errorf("ports --json: %v code %d\n%s", err, code, out)
	}

	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[1]
		p.State, p.Healthy, p.Fatal = "DOWN", false, true
		p.Counters[0].Breached = true
	})
	out, _, code = ctl(t, f.bus, nil, "ports")
	if code != exitFailed || !strings.Contains(out, "fatal (latched: link_downed)") {
		t.Errorf("ports with a fatal port: code %d\n%s", code, out)
	}

	// DESIGN.md section 13: the far end's latches are listed as the local
	// ones, in the codes nichealthctl ack takes.
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.Healthy, p.Verdict = false, "degraded"
		p.Counters[1].Breached = true
		p.Conditions = []dbusapi.ConditionView{
			{Check: "InfiniBandDegradationCheck", Entity: "mlx5_0/1 symbol_error", Kind: "counter-breach", Message: "symbol_error latched"},
			{Check: "InfiniBandFarEndCheck", Entity: "mlx5_0/1 peer:symbol_error", Kind: "peer-breach", Message: "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55]"},
			{Check: "InfiniBandFarEndCheck", Entity: "mlx5_0/1 peer-saturated:PortXmitDiscards", Kind: "peer-saturated", Message: "saturated"},
		}
	})
	out, _, _ = ctl(t, f.bus, nil, "ports")
	if !strings.Contains(out, "degraded (latched: symbol_error, peer:symbol_error, peer-saturated:PortXmitDiscards)") {
		t.Errorf("ports with far-end latches:\n%s", out)
	}
}

func TestCtl_Port(t *testing.T) {
	f := newFixture(t)
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.Counters[2].LostGbps, p.Counters[2].LostPercent = 12.5, 3.1
		p.Sanity = []string{"PCIe link x8 of x16"}
		p.LastChangeUSec = uint64(time.Now().Add(-time.Minute).UnixMicro())
	})
	out, errs, code := ctl(t, f.bus, nil, "port", "mlx5_0", "1")
	for _, want := range []string{"mlx5_0 port 1: degraded", "ACTIVE / LinkUp", "Compute (NUMA 0 shared with GPU 0)", "PCIe link x8 of x16",
		"COUNTER", "link_downed", "delta > 1 (fatal)", "velocity > 10/second", "lost 12.50 Gb/s (3.1%)", "1m0s ago"} {
		if !strings.Contains(out, want) {
			t.Errorf("port output lacks %q (code %d):\n%s%s", want, code, out, errs)
		}
	}
	// Flags after the positional arguments work too.
	out, _, code = ctl(t, f.bus, nil, "port", "mlx5_bond_0", "1", "--json")
	var pv dbusapi.PortView
	if err := json.Unmarshal([]byte(out), &pv); err != nil || code != exitOK || pv.Device != "mlx5_bond_0" || pv.NUMANode != -1 {
		t.Errorf("port --json: %v code %d\n%s", err, code, out)
	}
	_, errs, code = ctl(t, f.bus, nil, "port", "mlx5_7", "1")
	if code != exitFailed || !strings.Contains(errs, "no monitored port mlx5_7 port 1") {
		t.Errorf("unknown port: code %d %s", code, errs)
	}
	for _, args := range [][]string{{"port"}, {"port", "mlx5_0"}, {"port", "mlx5_0", "x"}, {"port", "mlx5_0", "0"}, {"port", "--bogus", "mlx5_0", "1"}} {
		if _, errs, code := ctl(t, f.bus, nil, args...); code != exitUsage {
			t.Errorf("%v: code %d, want %d (%s)", args, code, exitUsage, errs)
		}
	}
}

func publish(f *fixture, seq uint64, msg string, fatal bool) {
	ev := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: fatal, IsHealthy: !fatal,
		Message: msg, Device: "mlx5_0", Port: 1}, event.Stamp{NodeName: "gpu-node-1", Now: time.Now()})
	f.srv.Publish(ev, seq)
}

func TestCtl_Events(t *testing.T) {
	f := newFixture(t)
	publish(f, 1, "Port mlx5_0 port 1: state DOWN", true)
	publish(f, 2, "Port mlx5_0 port 1: healthy again", false)
	out, errs, code := ctl(t, f.bus, nil, "events")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 || !strings.Contains(lines[0], "#1 ") || !strings.Contains(lines[0], " fatal    InfiniBandStateCheck") ||
		!strings.Contains(lines[0], "InfiniBandStateCheck mlx5_0/1: Port mlx5_0 port 1: state DOWN") || !strings.Contains(lines[1], " healthy  InfiniBandStateCheck") {
		t.Errorf("events: code %d\n%s%s", code, out, errs)
	}
	out, _, code = ctl(t, f.bus, nil, "events", "--since", "1", "--json")
	var line struct {
		Seq   uint64      `json:"seq"`
		Event event.Event `json:"event"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil || code != exitOK || line.Seq != 2 || line.Event.CheckName != event.InfiniBandStateCheck || !line.Event.IsHealthy {
		t.Errorf("events --since 1 --json: %v code %d\n%s", err, code, out)
	}
	out, errs, code = ctl(t, f.bus, nil, "events", "--since", "2")
	if code != exitOK || out != "" || !strings.Contains(errs, "No events above sequence number 2") {
		t.Errorf("events --since 2: code %d %q %q", code, out, errs)
	}
}

func TestCtl_EventsFollow(t *testing.T) {
	f := newFixture(t)
	publish(f, 1, "first", true)
	cmd := exec.Command(ctlBin, "events", "--follow")
	cmd.Env = f.bus.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("no line from events --follow; stderr: %s", errb.String())
			return ""
		}
	}
	if l := next(); !strings.Contains(l, "#1 ") || !strings.Contains(l, "first") {
		t.Fatalf("backlog line = %q", l)
	}
	// The backlog is listed only after the subscription is in place, so
	// everything published from now on arrives by signal.
	publish(f, 2, "second", false)
	if l := next(); !strings.Contains(l, "#2 ") || !strings.Contains(l, "second") {
		t.Fatalf("followed line = %q", l)
	}
	publish(f, 3, "third", true)
	if l := next(); !strings.Contains(l, "#3 ") {
		t.Fatalf("followed line = %q", l)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("events --follow after SIGINT: %v (stderr %s)", err, errb.String())
	}
}

// Like journalctl -f: a daemon that has run for a while keeps hundreds of
// events, and someone following wants the last 10, then the live ones.
func TestCtl_EventsFollowShowsLastTen(t *testing.T) {
	f := newFixture(t)
	for seq := uint64(1); seq <= 12; seq++ {
		publish(f, seq, fmt.Sprintf("event %d", seq), seq%2 == 0)
	}
	// follow reads lines until the one of sequence number until; onLine
	// may publish more events meanwhile.
	follow := func(until string, onLine func(string), args ...string) []string {
		t.Helper()
		cmd := exec.Command(ctlBin, append([]string{"events", "--follow"}, args...)...)
		cmd.Env = f.bus.Env()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(stdout)
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
			if strings.HasPrefix(sc.Text(), until) {
				break
			}
			onLine(sc.Text())
		}
		return got
	}
	got := follow("#13 ", func(l string) {
		if strings.HasPrefix(l, "#12 ") {
			publish(f, 13, "live one", false)
		}
	})
	if len(got) != 11 || !strings.HasPrefix(got[0], "#3 ") || !strings.HasPrefix(got[9], "#12 ") || !strings.Contains(got[10], "live one") {
		t.Errorf("events --follow: want #3..#12 then the live #13, got %d lines:\n%s", len(got), strings.Join(got, "\n"))
	}
	got = follow("#13 ", func(string) {}, "--since", "1")
	if len(got) != 12 || !strings.HasPrefix(got[0], "#2 ") {
		t.Errorf("events --follow --since 1: want #2..#13, got %d lines:\n%s", len(got), strings.Join(got, "\n"))
	}
}

func TestCtl_Ack(t *testing.T) {
	f := newFixture(t)
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) { (*ports)[0].Counters[0].Breached = true })
	out, errs, code := ctl(t, f.bus, nil, "ack", "mlx5_0", "1", "link_downed")
	if code != exitOK || !strings.Contains(out, "Acknowledged the latched breach of link_downed on mlx5_0 port 1.") {
		t.Errorf("ack: code %d %s%s", code, out, errs)
	}
	if acks := f.be.Acks(); len(acks) != 1 || acks[0].Counter != "link_downed" {
		t.Errorf("acks = %+v", acks)
	}
	_, errs, code = ctl(t, f.bus, nil, "ack", "mlx5_0", "1")
	if code != exitFailed || strings.Count(errs, "no latched breach") != 1 || strings.Count(errs, "\n") != 1 {
		t.Errorf("ack with nothing latched: want one sentence naming the breach once, got code %d %q", code, errs)
	}
	_, errs, code = ctl(t, f.bus, nil, "ack", "mlx5_9", "1")
	if code != exitFailed || !strings.Contains(errs, "not monitored") {
		t.Errorf("ack of an unknown port: code %d %s", code, errs)
	}
	if _, errs, code := ctl(t, f.bus, nil, "ack", "mlx5_0"); code != exitUsage {
		t.Errorf("ack without port: code %d %s", code, errs)
	}
}

func TestCtl_AckDeniedToOthers(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		component.Missing(t, "setpriv not installed")
	}
	if os.Geteuid() != 0 {
		component.Missing(t, "running nichealthctl as another user needs root")
	}
	f := newFixture(t)
	for _, args := range [][]string{{"ack", "mlx5_0", "1"}, {"reload"}} {
		_, errs, code := ctl(t, f.bus, []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"}, args...)
		if code != exitFailed || !strings.Contains(errs, "use sudo or join group nichealth-admin") {
			t.Errorf("%v as nobody: code %d %s", args, code, errs)
		}
	}
	// Reading stays open to everybody.
	if out, errs, code := ctl(t, f.bus, []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"}, "ports"); code != exitOK {
		t.Errorf("ports as nobody: code %d %s%s", code, out, errs)
	}
}

func TestCtl_Reload(t *testing.T) {
	f := newFixture(t)
	out, errs, code := ctl(t, f.bus, nil, "reload")
	if code != exitOK || !strings.Contains(out, "Reloaded /etc/nichealthd/config.toml (configuration generation 2).") {
		t.Errorf("reload: code %d %s%s", code, out, errs)
	}
	f.be.SetReloadError(errors.New("/etc/nichealthd/config.toml: counterDetection.counters[0].thresholdType: must be delta or velocity"))
	_, errs, code = ctl(t, f.bus, nil, "reload")
	if code != exitFailed || !strings.Contains(errs, "refused and the previous one stays in effect") || !strings.Contains(errs, "must be delta or velocity") {
		t.Errorf("refused reload: code %d %s", code, errs)
	}
}

func TestCtl_DaemonNotRunning(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	for _, cmd := range [][]string{{"status"}, {"ports", "--json"}, {"port", "mlx5_0", "1"}, {"events"}, {"ack", "mlx5_0", "1"}, {"reload"}} {
		_, errs, code := ctl(t, bus, nil, cmd...)
		if code != exitUnreachable || !strings.Contains(errs, "nichealthd is not running on the system bus (org.nichealth.NicHealth1 has no owner): start it with systemctl start nichealthd") {
			t.Errorf("%v without daemon: code %d %s", cmd, code, errs)
		}
	}
	_, errs, code := ctl(t, nil, nil, "status", "--bus-address", "unix:path=/nonexistent/bus")
	if code != exitUnreachable || !strings.Contains(errs, "system bus unreachable") {
		t.Errorf("status with no bus: code %d %s", code, errs)
	}
}

func TestCtl_UsageAndVersion(t *testing.T) {
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{nil, exitUsage, ""},
		{[]string{"frobnicate"}, exitUsage, ""},
		{[]string{"--help"}, exitOK, "Exit status:"},
		{[]string{"--help"}, exitOK, "topology    collect, show or parse the GPU/NIC topology"},
		{[]string{"--version"}, exitOK, "nichealthctl "},
		{[]string{"status", "--help"}, exitOK, ""},
		{[]string{"status", "extra"}, exitUsage, ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) {
			t.Errorf("%v: code %d, want %d; out %q err %q", c.args, code, c.code, out.String(), errb.String())
		}
	}
}

func TestCtl_ParseInterspersedFlags(t *testing.T) {
	cases := []struct {
		args []string
		pos  []string
		json bool
	}{
		{[]string{"mlx5_0", "1", "--json"}, []string{"mlx5_0", "1"}, true},
		{[]string{"--json", "mlx5_0", "1"}, []string{"mlx5_0", "1"}, true},
		{[]string{"mlx5_0", "--json", "1"}, []string{"mlx5_0", "1"}, true},
		{[]string{"mlx5_0", "--", "--json"}, []string{"mlx5_0", "--json"}, false},
		{nil, nil, false},
	}
	for _, c := range cases {
		fs, cf := newFlagSet("t", "t", io.Discard)
		pos, _, ok := parseArgs(fs, c.args)
		if !ok || fmt.Sprint(pos) != fmt.Sprint(c.pos) || cf.json != c.json {
			t.Errorf("%v: pos %v json %v ok %v", c.args, pos, cf.json, ok)
		}
	}
}

func TestCtl_NoColourOffTerminalOrWithNoColor(t *testing.T) {
	if paletteFor(&bytes.Buffer{}).on {
		t.Error("colour on a buffer")
	}
	t.Setenv("NO_COLOR", "1")
	if paletteFor(os.Stdout).on {
		t.Error("colour despite NO_COLOR")
	}
}

func TestCtl_Age(t *testing.T) {
	now := time.Unix(1000, 0)
	cases := []struct {
		usec uint64
		want string
	}{
		{0, "never"},
		{uint64(now.Add(-300 * time.Millisecond).UnixMicro()), "300ms ago"},
		{uint64(now.Add(-2500 * time.Millisecond).UnixMicro()), "2.5s ago"},
		{uint64(now.Add(-90 * time.Second).UnixMicro()), "1m30s ago"},
		{uint64(now.Add(time.Second).UnixMicro()), "0ms ago"},
	}
	for _, c := range cases {
		if got := age(c.usec, now); got != c.want {
			t.Errorf("age(%d) = %q, want %q", c.usec, got, c.want)
		}
	}
}
