package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology/kmsg"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func TestCLI_Kmsg(t *testing.T) {
	root := filepath.Join(simtest.TempDir(t), "h")
	if _, stderr, code := simRun(t, "build", "--shape", "minimal", "--root", root); code != 0 {
		t.Fatal(stderr)
	}
	h, err := sim.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	src := kmsg.Open(kmsg.Options{Path: h.KmsgPath()})
	defer src.Close()
	out, stderr, code := simRun(t, "kmsg", "--root", root, "--nic", "mlx5_0", "--count", "2", "mlx5_core 0000:3b:00.0: poll_health:174:(pid 0): device's health compromised")
	if code != 0 || !strings.Contains(out, "wrote 2 records (seq 1..2)") {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	if _, stderr, code := simRun(t, "kmsg", "--root", root, "--facility", "user", "--level", "6", "from", "user", "space"); code != 0 {
		t.Fatal(stderr)
	}
	var got []kmsg.Record
	for deadline := time.Now().Add(20 * time.Second); len(got) < 3 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got = src.Drain(got, 0)
	}
	if len(got) < 3 {
		t.Fatalf("records %+v", got)
	}
	d, _ := h.Device("mlx5_0")
	if got[0].PCIAddress() != d.PCIAddress || got[0].Level != 3 || got[2].Facility != kmsg.FacilityUser || got[2].Message != "from user space" || got[2].Level != 6 {
		t.Fatalf("records %+v", got)
	}
	if _, stderr, code := simRun(t, "kmsg", "--root", root, "--nic", "mlx5_99", "x"); code == 0 || !strings.Contains(stderr, "mlx5_99") {
		t.Errorf("unknown NIC: exit %d %q", code, stderr)
	}
	if _, stderr, code := simRun(t, "kmsg", "--root", root); code != 2 || !strings.Contains(stderr, "MESSAGE") {
		t.Errorf("no message: exit %d %q", code, stderr)
	}
}
