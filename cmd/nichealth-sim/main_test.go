package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

var binary string

// TestMain builds the command once so the tests run it as operators do.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nichealth-sim-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "nichealth-sim")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func simRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "NICHEALTH_SIM_ROOT=")
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := simRun(t, args...)
	if code != 0 {
		t.Fatalf("nichealth-sim %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func portFile(t *testing.T, root, dev, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "sys/class/infiniband", dev, "ports/1", rel))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestCLI_EndToEnd(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	mustRun(t, "build", "--shape", "dgx-h100", "--root", root)
	if out := mustRun(t, "shapes"); !strings.Contains(out, "gb200") {
		t.Errorf("shapes: %s", out)
	}
	out := mustRun(t, "list", "--root", root)
	if !strings.Contains(out, "mlx5_12") || !strings.Contains(out, "Management") || !strings.Contains(out, "default route: enp13s0np0") {
		t.Errorf("list:\n%s", out)
	}
	mustRun(t, "port-state", "--root", root, "mlx5_0", "1", "DOWN", "Disabled")
	if s := portFile(t, root, "mlx5_0", "state"); s != "1: DOWN" {
		t.Errorf("state %q", s)
	}
	// flags after positionals work too
	mustRun(t, "counter", "set", "mlx5_0", "1", "counters/link_downed", "5", "--root", root)
	mustRun(t, "counter", "add", "--root", root, "mlx5_0", "1", "counters/link_downed", "2")
	if s := portFile(t, root, "mlx5_0", "counters/link_downed"); s != "7" {
		t.Errorf("link_downed %q", s)
	}
	mustRun(t, "counter", "reset", "--root", root, "mlx5_0", "1")
	if s := portFile(t, root, "mlx5_0", "counters/link_downed"); s != "0" {
		t.Errorf("link_downed after reset %q", s)
	}
	mustRun(t, "raw", "--root", root, "mlx5_1", "1", "counters/port_xmit_wait", "N/A (no PMA)")
	if s := portFile(t, root, "mlx5_1", "counters/port_xmit_wait"); s != "N/A (no PMA)" {
		t.Errorf("raw %q", s)
	}
	mustRun(t, "rate", "--root", root, "mlx5_1", "1", "200 Gb/sec (4X HDR)")
	mustRun(t, "operstate", "--root", root, "enp13s0np0", "down")
	mustRun(t, "carrier-changes", "--root", root, "enp13s0np0", "11")
	mustRun(t, "default-route", "--root", root, "none")
	mustRun(t, "default-route6", "--root", root, "enp13s0np0")
	if out := mustRun(t, "list", "--root", root); !strings.Contains(out, "IPv6 default route: enp13s0np0") {
		t.Errorf("show lacks the IPv6 default route:\n%s", out)
	}
	id := strings.TrimSpace(mustRun(t, "boot-id", "--root", root))
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/kernel/random/boot_id")); strings.TrimSpace(string(b)) != id {
		t.Errorf("boot-id printed %q, file has %q", id, b)
	}
	mustRun(t, "fifo", "--root", root, "mlx5_2", "1", "counters/symbol_error")
	mustRun(t, "unfifo", "--root", root, "mlx5_2", "1", "counters/symbol_error")
	mustRun(t, "remove", "--root", root, "mlx5_4")
	if _, err := os.Lstat(filepath.Join(root, "sys/class/infiniband/mlx5_4")); !os.IsNotExist(err) {
		t.Errorf("mlx5_4 still there: %v", err)
	}
	mustRun(t, "restore", "--root", root, "mlx5_4")
	mustRun(t, "rename", "--root", root, "mlx5_5", "ibp155s0")
	mustRun(t, "metadata", "--root", root, "remove")
	mustRun(t, "metadata", "--root", root, "write")

	h, err := sim.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Device("ibp155s0"); !ok {
		t.Error("rename not seen by sim.Open")
	}
	if h.DefaultRoute() != "" {
		t.Error("default route not removed")
	}
	if h.DefaultRoute6() != "enp13s0np0" {
		t.Errorf("IPv6 default route %q", h.DefaultRoute6())
	}
}

func TestCLI_ErrorsExit2OneLine(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	mustRun(t, "build", "--shape", "minimal", "--root", root, "--no-metadata")
	if _, err := os.Stat(filepath.Join(root, "var/lib/nvsentinel/gpu_metadata.json")); !os.IsNotExist(err) {
		t.Errorf("--no-metadata wrote metadata: %v", err)
	}
	cases := [][]string{
		{},
		{"frobnicate", "--root", root},
		{"build", "--root", root},
		{"build", "--shape", "minimal", "--root", root},
		{"build", "--shape", "nope", "--root", simtest.TempDir(t)},
		{"port-state", "mlx5_0", "1", "DOWN", "Disabled"},
		{"port-state", "--root", root, "mlx5_0", "x", "DOWN", "Disabled"},
		{"port-state", "--root", root, "mlx5_7", "1", "DOWN", "Disabled"},
		{"counter", "set", "--root", root, "mlx5_0", "1", "counters/link_downed", "-1"},
		{"counter", "bump", "--root", root},
		{"remove", "--root", simtest.TempDir(t), "mlx5_0"},
		{"list", "--root", root, "--bogus"},
	}
	for _, args := range cases {
		out, errOut, code := simRun(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stdout %q)", args, code, out)
		}
		if n := strings.Count(errOut, "\n"); n != 1 || !strings.HasPrefix(errOut, "nichealth-sim: ") {
			t.Errorf("%v: stderr %q, want one line", args, errOut)
		}
	}
}
