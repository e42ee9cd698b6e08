package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
	"github.com/nichealth/nichealthd/internal/iblab"
)

// binDir holds the binaries the demo drives, built once, as make build
// builds them (-trimpath shares its compile cache).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nichealth-demo-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// As make build builds them: -trimpath and CGO_ENABLED=0, so that the
	// compiled packages come from the cache make build (and the memory
	// test's production build) filled; with cgo on, every package that
	// imports net would be compiled once more.
	build := exec.Command("go", "build", "-trimpath", "-o", dir+"/",
		"github.com/nichealth/nichealthd/cmd/nichealthd",
		"github.com/nichealth/nichealthd/cmd/nichealthctl",
		"github.com/nichealth/nichealthd/cmd/nichealth-sim",
		"github.com/nichealth/nichealthd/cmd/nichealth-demo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build the binaries: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The MAD helper, as make build builds it (cgo): without the
	// libraries' headers the demo runs without its fabric lab.
	mad := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "github.com/nichealth/nichealthd/cmd/nichealth-mad")
	mad.Env = append(os.Environ(), "CGO_ENABLED=1")
	madBuilt = mad.Run() == nil
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// madBuilt says nichealth-mad was built: with the lab's programs, the
// demo shows the far end of a cable.
var madBuilt bool

// withLab says whether the demo runs its fabric lab here; under CI it
// must (the lab is part of what CI installs).
func withLab(t *testing.T) bool {
	t.Helper()
	err := iblab.Tools()
	if err == nil && madBuilt {
		return true
	}
	if component.UnderCI() {
		t.Fatalf("CI=true and the demo's fabric lab cannot run: %v (nichealth-mad built: %v)", err, madBuilt)
	}
	return false
}

func needDBus(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Skip("dbus-daemon not installed (apt-get install dbus): the demo's D-Bus views and the try-it node cannot run")
	}
}

// The story of make run: baselines summarised, every fault paired with its
// detection, the management NIC left alone, a summary, all before line 60.
func TestDemo_TellsTheStoryInUnder60Lines(t *testing.T) {
	needDBus(t)
	cmd := exec.Command(filepath.Join(binDir, "nichealth-demo"), "--bin", binDir, "--interval", "100ms")
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nichealth-demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	text := string(out)
	lab := withLab(t)
	before, _, ok := strings.Cut(text, "Summary:")
	if !ok {
		t.Fatalf("no summary:\n%s", text)
	}
	if n := strings.Count(before, "\n"); n >= 60 {
		t.Errorf("%d lines before the summary, want under 60:\n%s", n, before)
	}
	// The README's figure for the whole demo stays true: within 6 lines
	// of what it prints, with or without the fabric lab's 6 lines.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`make run. shows it in about (\d+) lines`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md no longer says how many lines `make run` prints (\"shows it in about N lines\")")
	}
	if said, n := atoi(t, string(m[1])), strings.Count(text, "\n"); n < said-6 || n > said+6 {
		t.Errorf("README.md says the demo prints about %d lines; it printed %d:\n%s", said, n, text)
	}
	checks, summaryLine, paired := "10", "Summary: 4 faults injected, 4 detected (5 events); 2 recoveries reported; 1 change on the management NIC correctly not alarmed on.", 7
	if lab {
		// The far end of mlx5_0's cable: its check starts clean too, and
		// its fault is one more, reported as one condition (the per-hour
		// rule waits for an hour of reads); mlx5_0's own symbol errors
		// after it are the sixth fault, one breach.
		checks, summaryLine, paired = "11", "Summary: 6 faults injected, 6 detected (7 events); 2 recoveries reported; 1 change on the management NIC correctly not alarmed on.", 9
		for _, want := range []string{
			"fabric lab: ibsim and opensm simulate two leaf switches",
			"degraded  InfiniBandFarEndCheck       mlx5_0/1  Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55]",
			// The switch port counts them, then our port too: both
			// directions of one cable, so the cable (DESIGN.md section 15).
			"mlx5_0/1 ↔ ibsw-leaf1 port 17: both, suspect cable — host symbol_error +40 in 2m0s; switch SymbolErrorCounter +55 in 2m0s",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("output lacks %q:\n%s", want, text)
			}
		}
	}
	for _, want := range []string{
		// dgx-h100: 8 compute IB ports, 4 storage RoCE ports, mlx5_12 management.
		"first complete poll (READY=1): 12 ports on 12 NICs monitored; all healthy",
		"roles: 8 Compute, 4 Storage ports watched; mlx5_12 not",
		"InfiniBandStateCheck        8 ports healthy at first start",
		"EthernetStateCheck          4 ports healthy at first start",
		"no state file yet, so " + checks + " checks started clean",
		"fatal     InfiniBandStateCheck        mlx5_3/1  Port mlx5_3 port 1: state DOWN",
		"fatal     InfiniBandStateCheck        mlx5_3/1  Port mlx5_3 port 1: link_downed",
		"healthy   InfiniBandStateCheck        mlx5_3/1",
		"fatal     EthernetStateCheck          mlx5_8/1",
		"degraded  InfiniBandDegradationCheck  mlx5_5/1  Port mlx5_5 port 1: symbol_error",
		"✓ no event after 3 polls, as designed",
		// The differentiator a scheduler acts on: which GPU to drain.
		"→ drain GPU3 (0000:5b:00.0",
		"GPUS  FIRMWARE",
		"fatal     InfiniBandStateCheck        mlx5_6    NIC mlx5_6 disappeared",
		// A NIC gone from the bus keeps the GPUs its last discovery saw.
		"→ drain GPU6 (",
		": behind mlx5_6",
		"Acknowledged the latched breach of link_downed on mlx5_3 port 1.",
		"healthy   InfiniBandStateCheck        mlx5_3/1  Counter link_downed recovered",
		summaryLine,
		"make try",
		// One cable, one verdict: mlx5_5's own receiver counts the symbol
		// errors, the switch-to-host direction.
		"mlx5_5/1: to-host, suspect unknown part — host symbol_error +5000 in 2m0s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Every detection carries its latency. The cable pull is one fatal
	// state event and one counter breach, no card anomaly besides.
	if n := len(regexp.MustCompile(`✓ +\d+ms `).FindAllString(text, -1)); n != paired {
		t.Errorf("%d events paired with a latency, want %d (the fault events and 2 recoveries):\n%s", n, paired, text)
	}
	if strings.Contains(text, "✗") || strings.Contains(text, "also") {
		t.Errorf("an event went missing or was not expected:\n%s", text)
	}
	if !regexp.MustCompile(`Detection latency p50 \d+ ms, max \d+ ms`).MatchString(text) {
		t.Errorf("no latency summary:\n%s", text)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// readmeOperatingBlock is the first sh block of docs/operating.md, the
// page the README links for the operator's commands.
func readmeOperatingBlock(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "# Operating it\n")
	if !ok {
		t.Fatal(`docs/operating.md has no "# Operating it" title`)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal(`docs/operating.md has no sh block`)
	}
	block, _, _ = strings.Cut(block, "```")
	comment := regexp.MustCompile(`\s{2,}#.*$`)
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(comment.ReplaceAllString(l, "")); l != "" {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// make try, then README's "Operating it" commands as written, then make
// try-stop. The only change to them: the metrics port, because engineers'
// and CI's test runs share the machine and 2112 may be taken.
func TestTry_ReadmeOperatingBlockWorksVerbatim(t *testing.T) {
	needDBus(t)
	dir := t.TempDir()
	metrics := freeLoopbackAddr(t)
	demo := filepath.Join(binDir, "nichealth-demo")
	start := exec.Command(demo, "--keep", "--dir", dir, "--bin", binDir, "--interval", "100ms",
		"--policy", "../../packaging/dbus/org.nichealth.NicHealth1.conf", "--metrics-address", metrics)
	t.Cleanup(func() {
		out, err := exec.Command(demo, "--stop", "--dir", dir).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Stopped nichealthd") || !strings.Contains(string(out), "Stopped dbus-daemon") {
			t.Errorf("nichealth-demo --stop: %v\n%s", err, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("--stop left %s behind", dir)
		}
	})
	out, err := start.CombinedOutput()
	if err != nil {
		t.Fatalf("nichealth-demo --keep: %v\n%s", err, out)
	}
	var exports []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "export ") {
			exports = append(exports, l)
		}
	}
	if len(exports) != 3 {
		t.Fatalf("want the 3 export lines, got %d:\n%s", len(exports), out)
	}
	// PATH from the exports must find the tools, not the test's own PATH.
	env := []string{"HOME=" + dir, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}

	ran := 0
	for _, c := range readmeOperatingBlock(t) {
		name := strings.Fields(c)[0]
		switch name {
		case "systemctl", "journalctl":
			t.Logf("not run (needs the installed unit under a real systemd; packaging/test/e2e-systemd.sh covers it): %s", c)
			continue
		case "sudo":
			if os.Getuid() != 0 {
				t.Logf("not run (sudo would ask for a password; run the tests as root to cover it): %s", c)
				continue
			}
		}
		ran++
		c = strings.ReplaceAll(c, "127.0.0.1:2112", metrics)
		script := strings.Join(exports, "\n") + "\n" + c + "\n"
		if strings.Contains(c, "--follow") {
			follow(t, script, env)
			continue
		}
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
		err := cmd.Run()
		timer.Stop()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Errorf("%s: %v", c, err)
			continue
		}
		// status/ports/port exit 1 for an unhealthy node, check 1 or 2 as a
		// Nagios plugin does; anything else must succeed.
		okCodes := map[int]bool{0: true}
		switch {
		case strings.HasPrefix(c, "nichealthctl status"), strings.HasPrefix(c, "nichealthctl ports"), strings.HasPrefix(c, "nichealthctl port "):
			okCodes[1] = true
		case strings.HasPrefix(c, "nichealthctl check"):
			okCodes[1], okCodes[2] = true, true
		}
		// wait-ready is a gate: silent when the node is ready.
		quietOK := strings.HasPrefix(c, "nichealthctl wait-ready")
		if !okCodes[code] || (strings.TrimSpace(stdout.String()) == "" && !quietOK) {
			t.Errorf("%s\nexit %d\nstdout:\n%s\nstderr:\n%s", c, code, stdout.String(), stderr.String())
		}
		if strings.Contains(c, "get-property") && strings.Contains(c, "Healthy") && os.Getuid() == 0 &&
			strings.TrimSpace(stdout.String()) != "b true" {
			t.Errorf("%s: %q, want b true once the README's ack has run", c, stdout.String())
		}
	}
	if ran < 10 {
		t.Errorf("only %d commands of the README's block ran; the extraction is broken", ran)
	}
}

// follow runs an events --follow command until it has printed 10 events,
// which must be the last 10 (the node has far more), then stops it with
// Ctrl-C as an operator would.
func follow(t *testing.T, script string, env []string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got []string
	for len(got) < 10 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("events --follow ended after %d lines; stderr: %s", len(got), stderr.String())
			}
			got = append(got, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("events --follow printed %d lines in 30s; stderr: %s", len(got), stderr.String())
		}
	}
	var first int
	if _, err := fmt.Sscanf(got[0], "#%d ", &first); err != nil || first <= 10 {
		t.Errorf("events --follow began with %q: want the last 10 of the node's events, not its first", got[0])
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("events --follow after Ctrl-C: %v (stderr %s)", err, stderr.String())
	}
}
