package sanity

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// TestSanity_Slides_PCIWidthSpeed proves the slides' "PCI width/speed of
// each HCA: identify failed hardware or firmware issues, appropriate slot
// placement" on the minimal node: a CX-7 (32.0 GT/s x16) below a PCIe
// switch port that can do 32.0 GT/s x16.
func TestSanity_Slides_PCIWidthSpeed(t *testing.T) {
	cases := []struct {
		name string
		hca  map[string]string // files of the HCA's PCI directory
		up   map[string]string // files of the upstream bridge
		rm   []string          // HCA files removed
		kind string            // "" = no finding
		msg  string            // exact message when set
		want []string          // substrings of the message
		err  bool
	}{
		{name: "healthy"},
		{name: "width x8 of x16", hca: map[string]string{"current_link_width": "8\n"}, kind: KindPCIeWidth,
			msg: "NIC mlx5_0 (ADDR) PCIe link runs at 32.0 GT/s x8, capable of 32.0 GT/s x16: reseat the card or check the slot/riser"},
		{name: "speed Gen4 of Gen5", hca: map[string]string{"current_link_speed": "16.0 GT/s PCIe\n"}, kind: KindPCIeSpeed,
			msg: "NIC mlx5_0 (ADDR) PCIe link runs at 16.0 GT/s x16, capable of 32.0 GT/s x16: reseat the card or check the slot/riser"},
		{name: "both low is a width finding", hca: map[string]string{"current_link_speed": "16.0 GT/s PCIe\n", "current_link_width": "8\n"},
			kind: KindPCIeWidth, msg: "NIC mlx5_0 (ADDR) PCIe link runs at 16.0 GT/s x8, capable of 32.0 GT/s x16: reseat the card or check the slot/riser"},
		{name: "Gen4 slot under a Gen5 card is tolerated", hca: map[string]string{"current_link_speed": "16.0 GT/s PCIe\n"},
			up: map[string]string{"max_link_speed": "16.0 GT/s PCIe\n", "current_link_speed": "16.0 GT/s PCIe\n"}},
		{name: "x8 slot under an x16 card is tolerated", hca: map[string]string{"current_link_width": "8\n"},
			up: map[string]string{"max_link_width": "8\n", "current_link_width": "8\n"}},
		{name: "slot limits the speed but lanes are missing", hca: map[string]string{"current_link_speed": "16.0 GT/s PCIe\n", "current_link_width": "4\n"},
			up: map[string]string{"max_link_speed": "16.0 GT/s PCIe\n"}, kind: KindPCIeWidth,
			want: []string{"runs at 16.0 GT/s x4, capable of 32.0 GT/s x16 (the slot's maximum is 16.0 GT/s): reseat"}},
		{name: "a slot faster than the link does not excuse it", hca: map[string]string{"current_link_speed": "8.0 GT/s PCIe\n"},
			up: map[string]string{"max_link_speed": "16.0 GT/s PCIe\n"}, kind: KindPCIeSpeed},
		{name: "older kernel format", hca: map[string]string{"current_link_speed": "8 GT/s\n", "max_link_speed": "16 GT/s\n"},
			kind: KindPCIeSpeed, want: []string{"runs at 8 GT/s x16, capable of 16 GT/s x16"}},
		{name: "x-prefixed width", hca: map[string]string{"current_link_width": "x4\n", "max_link_width": "x16\n"}, kind: KindPCIeWidth},
		{name: "Unknown speed while retraining", hca: map[string]string{"current_link_speed": "Unknown\n"}},
		{name: "Unknown speed text", hca: map[string]string{"current_link_speed": "Unknown speed\n"}},
		{name: "width 0 means link down, not x0", hca: map[string]string{"current_link_width": "0\n"}},
		{name: "faster than max is not a finding", hca: map[string]string{"current_link_width": "32\n"}},
		{name: "attributes missing (VM, old kernel)", rm: []string{"current_link_speed", "max_link_speed", "current_link_width", "max_link_width"}},
		{name: "only widths present", rm: []string{"current_link_speed", "max_link_speed"}, hca: map[string]string{"current_link_width": "2\n"}, kind: KindPCIeWidth,
			want: []string{"runs at unknown speed x2, capable of unknown speed x16"}},
		{name: "garbage speed is an error", hca: map[string]string{"current_link_speed": "fast\n"}, err: true},
		{name: "garbage width is an error", hca: map[string]string{"max_link_width": "sixteen\n"}, err: true},
		{name: "empty speed is an error", hca: map[string]string{"max_link_speed": "\n"}, err: true},
		{name: "garbage upstream does not excuse", hca: map[string]string{"current_link_width": "8\n"}, up: map[string]string{"max_link_width": "many\n"}, kind: KindPCIeWidth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := buildHost(t, "minimal")
			d := n.dev(t, "mlx5_0")
			for f, v := range c.hca {
				writeFile(t, filepath.Join(d.PCIDir, f), v)
			}
			for f, v := range c.up {
				writeFile(t, filepath.Join(filepath.Dir(d.PCIDir), f), v)
			}
			for _, f := range c.rm {
				remove(t, filepath.Join(d.PCIDir, f))
			}
			f, err := PCIe(d)
			if c.err {
				if err == nil || !errors.Is(err, sysfs.ErrUnreadable) || !strings.Contains(err.Error(), d.PCIDir) {
					t.Fatalf("want an ErrUnreadable naming the file, got %v (finding %+v)", err, f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == "" {
				if f != nil {
					t.Fatalf("unexpected finding %+v", f)
				}
				return
			}
			if f == nil {
				t.Fatalf("no finding, want %s", c.kind)
			}
			if f.Kind != c.kind || f.Device != "mlx5_0" || f.Port != 0 || f.Metadata["pciAddress"] != d.PCIAddress {
				t.Errorf("finding %+v", f)
			}
			if c.msg != "" {
				if want := strings.ReplaceAll(c.msg, "ADDR", d.PCIAddress); f.Message != want {
					t.Errorf("message\n got %q\nwant %q", f.Message, want)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
		})
	}
}

// A device directly below a host bridge (no upstream PCI function with
// link attributes) is judged on its own attributes.
func TestSanity_Slides_PCIWidthSpeedNoBridge(t *testing.T) {
	if f, err := PCIe(nil); f != nil || err != nil {
		t.Errorf("nil device: %v %v", f, err)
	}
	if f, err := PCIe(&topology.Device{Name: "mlx5_0"}); f != nil || err != nil {
		t.Errorf("no PCI dir: %v %v", f, err)
	}
	dir := filepath.Join(t.TempDir(), "pci0000:00", "0000:00:02.0")
	for f, v := range map[string]string{"current_link_speed": "32.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe", "current_link_width": "8", "max_link_width": "16"} {
		mkfile(t, filepath.Join(dir, f), v)
	}
	f, err := PCIe(&topology.Device{Name: "mlx5_9", PCIDir: dir})
	if err != nil || f == nil || f.Kind != KindPCIeWidth || !strings.Contains(f.Message, "NIC mlx5_9 (unknown PCI address) PCIe link runs at 32.0 GT/s x8") {
		t.Fatalf("got %+v, %v", f, err)
	}
}
