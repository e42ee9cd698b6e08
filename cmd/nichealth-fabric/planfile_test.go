package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestDesign_14_PlanFilesByteForByte: the files plan writes are, byte for
// byte, those this release's plan wrote before the file's shape moved to
// internal/fabricentry (testdata/plan-port255, see testdata/README.md):
// key names and order, the indent, switchLID, an empty list as [] and the
// unassigned list with its reason. A daemon of any release reads them as
// it did.
func TestDesign_14_PlanFilesByteForByte(t *testing.T) {
	hosts := []string{"node001", "node039", "gpu004"}
	out, planDir := planFiles(t, port255Ports(t), hosts...)
	golden := filepath.Join("testdata", "plan-port255")
	same := func(name string, got []byte) {
		t.Helper()
		want, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n%s\nwant\n%s", name, golden, got, want)
		}
	}
	same("plan.json", out.Bytes())
	for _, h := range hosts {
		b, err := os.ReadFile(filepath.Join(planDir, h+".json"))
		if err != nil {
			t.Fatal(err)
		}
		same(h+".json", b)
	}
}
