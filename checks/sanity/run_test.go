package sanity

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSanity_Run_EveryCheckOnItsSwitch injects one fault per check on a DGX
// H100 and proves Run reports each exactly when its option is on, ordered
// by device and port, and never for the management NIC or VFs.
func TestSanity_Run_EveryCheckOnItsSwitch(t *testing.T) {
	n := buildHost(t, "dgx-h100")
	all := Options{PCIe: true, RateVsPeers: true, SMLID: true, CharDevices: true, ISSM: true}
	if got := Run(n.h.Paths(), n.devs, nil, all); len(got) != 0 {
		t.Fatalf("healthy node: %+v", got)
	}
	mlx3 := n.dev(t, "mlx5_3")
	writeFile(t, filepath.Join(mlx3.PCIDir, "current_link_width"), "8\n")
	if err := n.h.SetRate("mlx5_2", 1, "200 Gb/sec (4X HDR)"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.WriteRaw("mlx5_1", 1, "sm_lid", "0x0\n"); err != nil {
		t.Fatal(err)
	}
	remove(t, filepath.Join(n.h.DevRoot(), "infiniband", n.madEntry(t, "umad", "mlx5_1", 1)))
	// Faults on devices that are never monitored.
	writeFile(t, filepath.Join(n.dev(t, "mlx5_12").PCIDir, "current_link_width"), "1\n")
	writeFile(t, filepath.Join(n.dev(t, "mlx5_13").PCIDir, "current_link_width"), "1\n")
	n.rediscover(t)

	summary := func(fs []Finding) []string {
		out := []string{}
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s/%d %s", f.Device, f.Port, f.Kind))
		}
		return out
	}
	cases := []struct {
		name string
		opts Options
		want []string
	}{
		{"nothing on", Options{}, []string{}},
		{"pcie", Options{PCIe: true}, []string{"mlx5_3/0 pcie-width"}},
		{"rate", Options{RateVsPeers: true}, []string{"mlx5_2/1 rate-below-peers"}},
		{"smlid", Options{SMLID: true}, []string{"mlx5_1/1 sm-lid"}},
		{"char devices", Options{CharDevices: true}, []string{"mlx5_1/1 char-device"}},
		{"all", all, []string{"mlx5_1/1 sm-lid", "mlx5_1/1 char-device", "mlx5_2/1 rate-below-peers", "mlx5_3/0 pcie-width"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := summary(Run(n.h.Paths(), n.devs, nil, c.opts)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v\nwant %v", got, c.want)
			}
		})
	}
	if got := Run(n.h.Paths(), nil, nil, all); len(got) != 0 {
		t.Errorf("no devices: %+v", got)
	}
}

func TestSanity_FindingAppliesTo(t *testing.T) {
	dev := Finding{Device: "mlx5_0", Kind: KindPCIeWidth}
	port := Finding{Device: "mlx5_0", Port: 2, Kind: KindSMLID}
	for _, c := range []struct {
		f    Finding
		dev  string
		port int
		want bool
	}{
		{dev, "mlx5_0", 1, true}, {dev, "mlx5_0", 2, true}, {dev, "mlx5_1", 1, false},
		{port, "mlx5_0", 2, true}, {port, "mlx5_0", 1, false}, {port, "mlx5_1", 2, false},
	} {
		if got := c.f.AppliesTo(c.dev, c.port); got != c.want {
			t.Errorf("%+v.AppliesTo(%s, %d) = %v", c.f, c.dev, c.port, got)
		}
	}
}
