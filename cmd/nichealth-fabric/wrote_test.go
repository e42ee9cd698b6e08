package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBin runs the built tool and returns stdout, stderr and the exit code.
func runBin(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errs.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errs.String(), 0
}

// TestFabric_40_11_StatusThatReadsNothingFails: --status naming a file,
// an empty directory or a directory of anything but status dumps exits
// non-zero saying it read no status, and writes no page, where it used to
// exit 0 with a page without health.
func TestFabric_40_11_StatusThatReadsNothingFails(t *testing.T) {
	bin := buildFabricTool(t)
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	junk := filepath.Join(dir, "junk")
	for _, d := range []string{empty, junk} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(junk, "prometheus.json"), []byte(`{"status":"success"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, status, want string }{
		{"a file", readme, "README.md is not a directory"},
		{"an empty directory", empty, "read no status: " + empty + " holds no *.json dump"},
		{"no dump among the files", junk, "read no status: none of the 1 *.json files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "fabric.html")
			out, errs, code := runBin(t, bin, "map", "--ibnetdiscover", edr, "--status", tc.status, "-o", page)
			if code != exitFailed || !strings.Contains(errs, tc.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errs, exitFailed, tc.want)
			}
			if _, err := os.Stat(page); !os.IsNotExist(err) {
				t.Errorf("a page was written: %v", err)
			}
		})
	}
}

// TestFabric_40_11_OutputSaysWhatItWrote: map -o and plan -o print one
// line naming what they wrote and its counts (stdout, or stderr when
// --json has stdout).
func TestFabric_40_11_OutputSaysWhatItWrote(t *testing.T) {
	bin := buildFabricTool(t)
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	if err := os.Mkdir(status, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(status, "n1.json"), []byte(`{"nodeName":"n1","ports":[{"device":"mlx5_0","port":1,"nodeGUID":"0x1","verdict":"healthy"},{"device":"mlx5_1","port":1,"nodeGUID":"0x2","verdict":"fatal"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "fabric.html")
	out, errs, code := runBin(t, bin, "map", "--ibnetdiscover", edr, "--status", status, "-o", page)
	want := "nichealth-fabric map: wrote " + page + ": 6 switches, 96 HCAs, 144 links, health of 2 ports from status dumps in " + status + "\n"
	if code != exitOK || out != want || errs != "" {
		t.Fatalf("map: exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, want, errs)
	}
	out, errs, code = runBin(t, bin, "map", "--ibnetdiscover", edr, "-o", page, "--json")
	if code != exitOK || !strings.HasPrefix(out, "{") || !strings.Contains(errs, "wrote "+page+": 6 switches, 96 HCAs, 144 links, no health") {
		t.Fatalf("map --json: exit %d stderr %q", code, errs)
	}

	nodes := filepath.Join(dir, "nodes")
	if err := os.WriteFile(nodes, []byte("node[001-002]\ngpu004\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planDir := filepath.Join(dir, "plan")
	out, errs, code = runBin(t, bin, "plan", "--ibnetdiscover", edrPorts, "--lfts", edrLFTs, "--nodes", nodes, "-o", planDir)
	prefix := "nichealth-fabric plan: wrote 3 files " + filepath.Join(planDir, "node001.json") + " ... " + filepath.Join(planDir, "gpu004.json") + ": "
	if code != exitOK || !strings.HasPrefix(out, prefix) || !strings.HasSuffix(out, " assigned to 3 hosts, 0 unassigned\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("plan: exit %d\nstdout %q\nwant prefix %q\nstderr %q", code, out, prefix, errs)
	}
	entries, err := os.ReadDir(planDir)
	if err != nil || len(entries) != 3 {
		t.Fatalf("%v %v", entries, err)
	}
}
