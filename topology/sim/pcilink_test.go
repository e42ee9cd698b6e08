package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// link reads the four link files of a PCI address as
// "current_speed current_width / max_speed max_width".
func link(t *testing.T, h *sim.Host, addr string) string {
	t.Helper()
	var v []string
	for _, f := range []string{"current_link_speed", "current_link_width", "max_link_speed", "max_link_width"} {
		b, err := os.ReadFile(filepath.Join(h.SysRoot(), "bus", "pci", "devices", addr, f))
		if err != nil {
			t.Fatal(err)
		}
		v = append(v, strings.TrimSpace(string(b)))
	}
	return v[0] + " x" + v[1] + " / " + v[2] + " x" + v[3]
}

// Every hop carries the four link files with what real hardware shows: a
// link trains to the lesser of its two ends.
func TestPCIeLink_RealisticValues(t *testing.T) {
	cases := []struct{ shape, addr, want string }{
		// DGX H100: Gen5 root port, Gen5 switch, CX-7 Gen5 x16.
		{"dgx-h100", "0000:15:01.0", "32.0 GT/s PCIe x16 / 32.0 GT/s PCIe x16"}, // root port
		{"dgx-h100", "0000:16:00.0", "32.0 GT/s PCIe x16 / 32.0 GT/s PCIe x16"}, // switch upstream port
		{"dgx-h100", "0000:17:01.0", "32.0 GT/s PCIe x16 / 32.0 GT/s PCIe x16"}, // downstream port above mlx5_0
		{"dgx-h100", "0000:19:00.0", "32.0 GT/s PCIe x16 / 32.0 GT/s PCIe x16"}, // mlx5_0
		// OCI A100: Gen4 switches below a Gen5 root port, CX-6 Gen4 cards.
		{"a100-oci", "0000:40:01.0", "16.0 GT/s PCIe x16 / 32.0 GT/s PCIe x16"},
		{"a100-oci", "0000:41:00.0", "16.0 GT/s PCIe x16 / 16.0 GT/s PCIe x16"},
		{"a100-oci", "0000:47:00.0", "16.0 GT/s PCIe x16 / 16.0 GT/s PCIe x16"},
		{"a100-oci", "0000:48:00.0", "16.0 GT/s PCIe x16 / 16.0 GT/s PCIe x16"},
		// A Gen4 x8 Broadcom NIC in a Gen5 x16 root port.
		{"h100-oci", "0000:08:01.0", "16.0 GT/s PCIe x8 / 32.0 GT/s PCIe x16"},
	}
	hosts := map[string]*sim.Host{}
	for _, c := range cases {
		if hosts[c.shape] == nil {
			hosts[c.shape] = simtest.Build(t, c.shape)
		}
		if got := link(t, hosts[c.shape], c.addr); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.shape, c.addr, got, c.want)
		}
	}
}

func TestPCIeLink_SetByNICOrAddress(t *testing.T) {
	h := simtest.Build(t, "h100-oci")
	addr, err := h.SetPCIeLink("mlx5_0", "", "x8")
	if err != nil || addr != "0000:17:00.0" {
		t.Fatalf("port above mlx5_0: %q %v", addr, err)
	}
	if got := link(t, h, addr); got != "32.0 GT/s PCIe x8 / 32.0 GT/s PCIe x16" {
		t.Fatalf("after x8: %s", got)
	}
	if _, err := h.SetPCIeLink("0000:10:01.0", "8", ""); err != nil {
		t.Fatal(err)
	}
	if got := link(t, h, "0000:10:01.0"); got != "8.0 GT/s PCIe x16 / 32.0 GT/s PCIe x16" {
		t.Fatalf("root port Gen3: %s", got)
	}
	if _, err := h.SetPCIeLink("0000:10:01.0", "unknown", ""); err != nil || !strings.HasPrefix(link(t, h, "0000:10:01.0"), "Unknown x16") {
		t.Fatalf("Unknown: %v %s", err, link(t, h, "0000:10:01.0"))
	}
	s, w, err := h.PCIeLinkMax("mlx5_0")
	if err != nil || s != "32.0 GT/s PCIe" || w != "16" {
		t.Fatalf("max %q %q %v", s, w, err)
	}
	for _, bad := range [][3]string{{"mlx5_99", "8", ""}, {"0000:ff:00.0", "8", ""}, {"mlx5_0", "fast", ""}, {"mlx5_0", "", "sixteen"}} {
		if _, err := h.SetPCIeLink(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("SetPCIeLink%q succeeded", bad)
		}
	}
}
