package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// TestCLI_GIDTable: nichealth-sim gid rewrites a RoCE port's GID table
// (seed 9.1) and refuses an IB port, whose table the subnet manager fills.
func TestCLI_GIDTable(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	mustRun(t, "build", "--shape", "dgx-h100", "--root", root)
	port := filepath.Join(root, "sys/class/infiniband/mlx5_8/ports/1")
	v2 := func() int {
		n := 0
		ents, _ := os.ReadDir(filepath.Join(port, "gid_attrs/types"))
		for _, e := range ents {
			if b, _ := os.ReadFile(filepath.Join(port, "gid_attrs/types", e.Name())); strings.TrimSpace(string(b)) == "RoCE v2" {
				n++
			}
		}
		return n
	}
	if n := v2(); n != 2 {
		t.Fatalf("built table has %d RoCE v2 entries, want the link-local and the IPv4 one", n)
	}
	mustRun(t, "gid", "--root", root, "mlx5_8", "1", "no-v2")
	if n := v2(); n != 0 {
		t.Fatalf("no-v2 left %d RoCE v2 entries", n)
	}
	mustRun(t, "gid", "--root", root, "mlx5_8", "1", "ok")
	if n := v2(); n != 2 {
		t.Fatalf("ok restored %d RoCE v2 entries", n)
	}
	if _, errOut, code := simRun(t, "gid", "--root", root, "mlx5_0", "1", "empty"); code != 2 || !strings.Contains(errOut, "not a RoCE device") {
		t.Fatalf("IB port: exit %d %q", code, errOut)
	}
	if _, errOut, code := simRun(t, "gid", "--root", root, "mlx5_8", "1", "sideways"); code != 2 || !strings.Contains(errOut, "sideways") {
		t.Fatalf("bad state: exit %d %q", code, errOut)
	}
}
