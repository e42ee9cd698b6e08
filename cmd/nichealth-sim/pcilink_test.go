package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func TestCLI_PCIeLink(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	mustRun(t, "build", "--shape", "h100-oci", "--root", root)
	if out := mustRun(t, "pcie-link", "--root", root, "mlx5_0", "", "8"); strings.TrimSpace(out) != "0000:17:00.0" {
		t.Fatalf("pcie-link printed %q, want the port above mlx5_0", out)
	}
	mustRun(t, "pcie-link", "--root", root, "0000:10:01.0", "8", "")
	for f, want := range map[string]string{
		"0000:17:00.0/current_link_width": "8", "0000:17:00.0/current_link_speed": "32.0 GT/s PCIe",
		"0000:10:01.0/current_link_speed": "8.0 GT/s PCIe", "0000:10:01.0/max_link_speed": "32.0 GT/s PCIe",
	} {
		b, err := os.ReadFile(filepath.Join(root, "sys/bus/pci/devices", f))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q (%v), want %q", f, b, err, want)
		}
	}
	for _, args := range [][]string{
		{"pcie-link", "--root", root, "mlx5_0", "", ""},
		{"pcie-link", "--root", root, "mlx5_0", "8"},
		{"pcie-link", "--root", root, "0000:ee:00.0", "8", ""},
		{"pcie-link", "--root", root, "mlx5_0", "fast", ""},
	} {
		if _, errOut, code := simRun(t, args...); code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
