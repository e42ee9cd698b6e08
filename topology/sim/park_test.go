package sim_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/reader"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// FailFile makes a reader given the host's errno table see the chosen
// errno on exactly that file (the real file is still there and still
// opened), and off undoes it; a reader without the table (the production
// daemon's) never sees it.
func TestParking_SimFailFile(t *testing.T) {
	h := simtest.Build(t, "minimal")
	const rel = "counters/symbol_error"
	p, err := h.PortPath("mlx5_0", 1, rel)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := h.PortPath("mlx5_0", 1, "counters/link_downed")
	rd := reader.New(reader.Options{Timeout: 5 * time.Second, Faults: sim.NewErrnoTable(h.Root)})
	defer rd.Close()
	for _, tc := range []struct {
		name  string
		errno unix.Errno
	}{{"EIO", unix.EIO}, {"einval", unix.EINVAL}, {"EOPNOTSUPP", unix.EOPNOTSUPP}, {"EACCES", unix.EACCES}, {"EPERM", unix.EPERM}} {
		if err := h.FailFile("mlx5_0", 1, rel, tc.name); err != nil {
			t.Fatal(err)
		}
		if _, err := rd.ReadFile(p, 0); !errors.Is(err, tc.errno) {
			t.Fatalf("%s: read %v", tc.name, err)
		}
		if _, err := rd.ReadFile(other, 0); err != nil {
			t.Fatalf("%s: another file fails too: %v", tc.name, err)
		}
		if err := h.FailFile("mlx5_0", 1, rel, "off"); err != nil {
			t.Fatal(err)
		}
		if _, err := rd.ReadFile(p, 0); err != nil {
			t.Fatalf("%s off: %v", tc.name, err)
		}
	}
	if err := h.FailFile("mlx5_0", 1, rel, "EAGAIN-ISH"); err == nil {
		t.Fatal("unknown errno accepted")
	}
	if err := h.FailFile("mlx5_0", 1, "counters/nope", "EIO"); err == nil {
		t.Fatal("missing file accepted")
	}
	if err := h.FailFile("mlx5_0", 1, rel, "EACCES"); err != nil {
		t.Fatal(err)
	}
	if m, err := h.FailingFiles(); err != nil || m["class/infiniband/mlx5_0/ports/1/"+rel] != "EACCES" {
		t.Fatalf("FailingFiles = %v, %v", m, err)
	}
	plain := reader.New(reader.Options{Timeout: 5 * time.Second})
	defer plain.Close()
	if _, err := plain.ReadFile(p, 0); err != nil {
		t.Fatalf("a reader without the table: %v", err)
	}
}
