package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func TestParking_FailCommand(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	mustRun(t, "build", "--shape", "minimal", "--root", root)
	table := filepath.Join(root, sim.ErrnoTableName)
	mustRun(t, "fail", "--root", root, "mlx5_0", "1", "counters/symbol_error", "EACCES")
	b, err := os.ReadFile(table)
	if err != nil || !strings.Contains(string(b), "EACCES class/infiniband/mlx5_0/ports/1/counters/symbol_error\n") {
		t.Fatalf("table %q %v", b, err)
	}
	mustRun(t, "fail", "--root", root, "mlx5_0", "1", "counters/symbol_error", "off")
	if b, _ := os.ReadFile(table); strings.Contains(string(b), "symbol_error") {
		t.Fatalf("off left %q", b)
	}
	if _, errOut, code := simRun(t, "fail", "--root", root, "mlx5_0", "1", "counters/symbol_error", "EWHAT"); code != 2 || !strings.Contains(errOut, "EWHAT") {
		t.Fatalf("bad errno: exit %d %q", code, errOut)
	}
}
