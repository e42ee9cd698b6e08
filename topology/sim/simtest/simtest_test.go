package simtest

import (
	"os"
	"testing"
)

func TestBuild_RemovedAtCleanup(t *testing.T) {
	var root string
	t.Run("inner", func(t *testing.T) {
		h := Build(t, "minimal")
		root = h.Root
		if _, ok := h.Device("mlx5_0"); !ok {
			t.Fatal("minimal has no mlx5_0")
		}
		if _, err := os.Stat(h.Paths().ClassInfiniBand + "/mlx5_0/ports/1/state"); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s survives its test: %v", root, err)
	}
}

func TestTempDir_EnvOverride(t *testing.T) {
	base := t.TempDir()
	t.Setenv("NICHEALTH_SIM_TMPDIR", base)
	d := TempDir(t)
	if len(d) <= len(base) || d[:len(base)] != base {
		t.Errorf("TempDir %s not under %s", d, base)
	}
}
