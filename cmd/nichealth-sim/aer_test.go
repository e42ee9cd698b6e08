package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func TestCLI_AER(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	if _, stderr, code := simRun(t, "build", "--shape", "minimal", "--root", root); code != 0 {
		t.Fatal(stderr)
	}
	sw, stderr, code := simRun(t, "aer", "add", "above:mlx5_0", "nonfatal", "CmpltTO", "3", "--root", root)
	sw = strings.TrimSpace(sw)
	if code != 0 {
		t.Fatal(stderr)
	}
	file := filepath.Join(root, "sys/bus/pci/devices", sw, "aer_dev_nonfatal")
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "\nCmpltTO 3\n") || !strings.HasSuffix(string(b), "TOTAL_ERR_NONFATAL 3\n") {
		t.Errorf("after aer add: %q", b)
	}
	if _, stderr, code := simRun(t, "aer", "remove", sw, "--root", root); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("aer remove left %s: %v", file, err)
	}
	if _, stderr, code := simRun(t, "aer", "add", sw, "bogus", "X", "1", "--root", root); code != 2 || !strings.Contains(stderr, "unknown AER class") {
		t.Errorf("bad class: exit %d %q", code, stderr)
	}
	bare := filepath.Join(simtest.TempDir(t), "b")
	if _, stderr, code := simRun(t, "build", "--shape", "minimal", "--no-aer", "--root", bare); code != 0 {
		t.Fatal(stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(bare, "sys/devices/*/*/aer_dev_fatal")); len(m) != 0 {
		t.Errorf("--no-aer built %v", m)
	}
}
