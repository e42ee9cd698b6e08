package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func readAER(t *testing.T, h *sim.Host, pci, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.SysRoot(), "bus/pci/devices", pci, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAER_SimFilesAndFaults(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	nic, _ := h.Device("mlx5_0")
	above, err := h.AERAbove("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAER(t, h, nic.PCIAddress, "aer_dev_correctable"); !strings.HasPrefix(got, "RxErr 0\nBadTLP 0\n") || !strings.HasSuffix(got, "TOTAL_ERR_COR 0\n") {
		t.Errorf("NIC correctable file %q", got)
	}
	if err := h.AddAER(above, "nonfatal", "CmpltTO", 3); err != nil {
		t.Fatal(err)
	}
	if got := readAER(t, h, above, "aer_dev_nonfatal"); !strings.Contains(got, "\nCmpltTO 3\n") || !strings.HasSuffix(got, "TOTAL_ERR_NONFATAL 3\n") {
		t.Errorf("after AddAER: %q", got)
	}
	if got := readAER(t, h, nic.PCIAddress, "aer_dev_nonfatal"); strings.Contains(got, "CmpltTO 3") {
		t.Error("AddAER on the switch port changed the NIC's file (shared inode)")
	}
	if err := h.AddAER(above, "fatal", "NoSuchName", 1); err == nil {
		t.Error("unknown name accepted")
	}
	s8, _ := h.AERAbove("mlx5_8")
	if got := readAER(t, h, s8, "aer_rootport_total_err_fatal"); got != "0\n" {
		t.Errorf("root port total %q", got)
	}
	if err := h.AddAER(s8, "fatal", "MalfTLP", 2); err != nil {
		t.Fatal(err)
	}
	if got := readAER(t, h, s8, "aer_rootport_total_err_fatal"); got != "2\n" {
		t.Errorf("root port total after AddAER %q", got)
	}
	if err := h.RemoveAER(above); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.SysRoot(), "bus/pci/devices", above, "aer_dev_fatal")); !os.IsNotExist(err) {
		t.Errorf("RemoveAER left aer_dev_fatal: %v", err)
	}
	if err := h.ResetAER(above); err != nil || readAER(t, h, above, "aer_dev_nonfatal") == "" {
		t.Errorf("ResetAER: %v", err)
	}
	bare := simtest.BuildWith(t, "minimal", sim.BuildOptions{NoAER: true})
	d, _ := bare.Device("mlx5_0")
	if _, err := os.Stat(filepath.Join(bare.SysRoot(), "bus/pci/devices", d.PCIAddress, "aer_dev_correctable")); !os.IsNotExist(err) {
		t.Errorf("NoAER built AER files: %v", err)
	}
}
