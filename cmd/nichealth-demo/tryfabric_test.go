package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// make try with the lab's programs: the node's mlx5_0 is cabled into the
// fabric lab, the output says how to break the far end, and doing what it
// says shows in nichealthctl port, /metrics and the acknowledgement; make
// try-stop ends the lab too.
func TestTry_FarEndFaultsByHand(t *testing.T) {
	needDBus(t)
	if !withLab(t) {
		t.Skip("the fabric lab's programs or nichealth-mad are missing here (make try then runs without the far end)")
	}
	metrics := freeLoopbackAddr(t)
	dir, code, out, errs := startTryNode(t, binDir, "--metrics-address", metrics)
	if code != 0 {
		t.Fatalf("make try exited %d:\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"Far end: mlx5_0 port 1 is cabled to ibsw-leaf1 port 17",
		"nichealth-sim farend errors SymbolErrorCounter 500",
		"nichealthctl port mlx5_0 1",
		"nichealthctl ack mlx5_0 1 peer:symbol_error",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make try's output lacks %q:\n%s", want, out)
		}
	}
	procs, err := readPidFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range procs {
		names = append(names, p.name)
	}
	if got := strings.Join(names, " "); got != "nichealthd opensm ibsim dbus-daemon" {
		t.Fatalf("pid file lists %q, want the daemon, then the lab, then the bus", got)
	}
	sh := tryShell(t, out)

	sh.run(t, "nichealth-sim farend errors SymbolErrorCounter 500")
	port := sh.until(t, "nichealthctl port mlx5_0 1", "[SymbolErrorCounter == 500]")
	for _, want := range []string{"mlx5_0 port 1: degraded", "Far end: ibsw-leaf1 port 17 (node GUID 0xb83fd20300a01000)", "Far counters: SymbolErrorCounter=500"} {
		if !strings.Contains(port, want) {
			t.Errorf("nichealthctl port mlx5_0 1 lacks %q:\n%s", want, port)
		}
	}
	page := get(t, "http://"+metrics+"/metrics")
	if !strings.Contains(page, `nichealth_peer_port_counter{device="mlx5_0",port="1",peer_guid="0xb83fd20300a01000",peer_port="17",peer_name="ibsw-leaf1",counter="SymbolErrorCounter"} 500`) {
		t.Errorf("/metrics lacks the switch port's SymbolErrorCounter 500")
	}
	if os.Getuid() == 0 {
		if got := sh.run(t, "nichealthctl ack mlx5_0 1 peer:symbol_error"); !strings.Contains(got, "Acknowledged") {
			t.Errorf("ack peer:symbol_error: %s", got)
		}
	}
	sh.run(t, "nichealth-sim farend unlink")
	sh.run(t, "nichealth-sim farend clear")
	sh.until(t, "nichealthctl port mlx5_0 1", "mlx5_0 port 1: healthy")

	stop := exec.Command(filepath.Join(binDir, "nichealth-demo"), "--stop", "--dir", dir)
	if b, err := stop.CombinedOutput(); err != nil || !strings.Contains(string(b), "Stopped ibsim") || !strings.Contains(string(b), "Stopped opensm") {
		t.Errorf("make try-stop did not stop the lab: %v\n%s", err, b)
	}
	for _, p := range procs {
		if p.running() {
			t.Errorf("%s (pid %d) still runs after make try-stop", p.name, p.pid)
		}
	}
}

// Without the lab's programs make try runs the node with the far end off
// and says once what to install.
func TestTry_WithoutTheLabSaysWhatToInstall(t *testing.T) {
	needDBus(t)
	dbusDaemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir()
	if err := os.Symlink(dbusDaemon, filepath.Join(path, "dbus-daemon")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "nichealth-demo"), "--keep", "--dir", dir, "--bin", binDir, "--interval", "100ms",
		"--policy", "../../packaging/dbus/org.nichealth.NicHealth1.conf", "--metrics-address", freeLoopbackAddr(t))
	cmd.Env = withEnv(os.Environ(), "PATH", path)
	t.Cleanup(func() { _ = exec.Command(filepath.Join(binDir, "nichealth-demo"), "--stop", "--dir", dir).Run() })
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make try without the lab: %v\n%s", err, b)
	}
	out := string(b)
	if n := strings.Count(out, "apt-get install ibsim-utils opensm infiniband-diags"); n != 1 {
		t.Errorf("what to install is said %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "Far end: off") || strings.Contains(out, "farend errors") {
		t.Errorf("want the far end off and no recipe for it:\n%s", out)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.toml"))
	if err != nil || !strings.Contains(string(cfg), "[farEnd]\nenabled = false") {
		t.Errorf("config.toml without the lab: want [farEnd] enabled = false (%v):\n%s", err, cfg)
	}
}

// shell runs make try's printed export lines, then a command, as an
// operator who pasted them does.
type shell struct{ exports string }

func tryShell(t *testing.T, out string) shell {
	t.Helper()
	var ex []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "export ") {
			ex = append(ex, l)
		}
	}
	if len(ex) != 3 {
		t.Fatalf("want make try's 3 export lines:\n%s", out)
	}
	return shell{strings.Join(ex, "\n")}
}

func (s shell) exec(c string) (string, error) {
	cmd := exec.Command("bash", "-c", s.exports+"\n"+c)
	cmd.Env = []string{"HOME=" + os.TempDir(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

func (s shell) run(t *testing.T, c string) string {
	t.Helper()
	out, err := s.exec(c)
	if err != nil {
		t.Fatalf("%s: %v\n%s", c, err, out)
	}
	return out
}

// until runs c until its output contains want (the far end is read every
// 5 s; a loaded machine may take a few rounds).
func (s shell) until(t *testing.T, c, want string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		out, _ = s.exec(c)
		if strings.Contains(out, want) {
			return out
		}
	}
	t.Fatalf("%s never showed %q; last:\n%s", c, want, out)
	return ""
}
