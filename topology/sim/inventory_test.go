package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sysfs"
)

// A function detached in each mode keeps its PCI directory on the bus,
// loses its RDMA device (and what the mode takes with it), and comes back
// as the very same tree.
func TestSim_DetachFunctionModesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dev, mode string
		driver    string // "" none
		netdev    bool
	}{
		{"mlx5_3", DetachUnbound, "", false},
		{"mlx5_3", DetachNoRDMA, "mlx5_core", false},
		{"mlx5_9", DetachNoRDMA, "mlx5_core", true},
		{"mlx5_3", DetachDriverPrefix + "vfio-pci", "vfio-pci", false},
	} {
		t.Run(tc.dev+" "+tc.mode, func(t *testing.T) {
			h := buildShape(t, "dgx-h100")
			before := snapshot(t, h.Root)
			d, _ := h.Device(tc.dev)
			if err := h.DetachFunction(tc.dev, tc.mode); err != nil {
				t.Fatal(err)
			}
			pci := filepath.Join(h.SysRoot(), d.PCIPath)
			for _, p := range []string{filepath.Join(h.Paths().ClassInfiniBand, tc.dev), filepath.Join(pci, "infiniband"), filepath.Join(pci, "infiniband_verbs")} {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("%s survives: %v", p, err)
				}
			}
			if _, err := os.Stat(filepath.Join(h.SysRoot(), "bus/pci/devices", d.PCIAddress, "vendor")); err != nil {
				t.Errorf("the function left the bus: %v", err)
			}
			drv, _ := os.Readlink(filepath.Join(pci, "driver"))
			if filepath.Base(drv) != tc.driver && !(tc.driver == "" && drv == "") {
				t.Errorf("driver %q, want %q", drv, tc.driver)
			}
			if _, err := os.Stat(filepath.Join(h.Paths().ClassNet, d.NetDev)); (err == nil) != tc.netdev {
				t.Errorf("netdev %s present %v, want %v", d.NetDev, err == nil, tc.netdev)
			}
			if x, _ := Open(h.Root); !strings.Contains(mustDevice(t, x, tc.dev).Detached, strings.TrimPrefix(tc.mode, DetachDriverPrefix)) {
				t.Errorf("manifest: %+v", mustDevice(t, x, tc.dev))
			}
			if err := h.RestoreDevice(tc.dev); err != nil {
				t.Fatal(err)
			}
			if got := diff(before, snapshot(t, h.Root)); len(got) != 0 {
				t.Errorf("tree differs after detach+restore: %v", got)
			}
		})
	}
	h := buildShape(t, "minimal")
	if err := h.DetachFunction("mlx5_0", "sideways"); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

func mustDevice(t *testing.T, h *Host, name string) DeviceInfo {
	t.Helper()
	for _, d := range h.Devices() {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no %s", name)
	return DeviceInfo{}
}

// The VPD of every PF carries its serial; SetLimitedPF adds NVIDIA's
// marker; SetFirmware changes fw_ver and board_id.
func TestSim_VPDAndFirmware(t *testing.T) {
	h := buildShape(t, "dgx-h100")
	d, _ := h.Device("mlx5_5")
	b, err := os.ReadFile(filepath.Join(h.SysRoot(), d.PCIPath, "vpd"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := sysfs.ParseVPD(b)
	if err != nil || v.Serial() != d.Serial || d.Serial == "" || v.LimitedPF() {
		t.Fatalf("vpd %+v %v, manifest serial %q", v, err, d.Serial)
	}
	if err := h.SetLimitedPF("mlx5_5", true); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(h.SysRoot(), d.PCIPath, "vpd"))
	if v, _ := sysfs.ParseVPD(b); !v.LimitedPF() || v.Serial() != d.Serial {
		t.Fatalf("limited vpd %+v", v)
	}
	if err := h.SetFirmware("mlx5_5", "28.36.1010", "MT_0000000999"); err != nil {
		t.Fatal(err)
	}
	fw, _ := os.ReadFile(filepath.Join(h.Paths().ClassInfiniBand, "mlx5_5", "fw_ver"))
	psid, _ := os.ReadFile(filepath.Join(h.Paths().ClassInfiniBand, "mlx5_5", "board_id"))
	if string(fw) != "28.36.1010\n" || string(psid) != "MT_0000000999\n" {
		t.Fatalf("fw_ver %q board_id %q", fw, psid)
	}
}
