package sanity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// madEntry finds the class/infiniband_mad entry of kind (umad, issm) for a
// port of the simulated host.
func (n *host) madEntry(t *testing.T, kind, dev string, port int) string {
	t.Helper()
	dir := filepath.Join(n.h.SysRoot(), "class", "infiniband_mad")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), kind) {
			continue
		}
		ib, _ := os.ReadFile(filepath.Join(dir, e.Name(), "ibdev"))
		p, _ := os.ReadFile(filepath.Join(dir, e.Name(), "port"))
		if strings.TrimSpace(string(ib)) == dev && strings.TrimSpace(string(p)) == "1" && port == 1 {
			return e.Name()
		}
	}
	t.Fatalf("no %s entry for %s port %d", kind, dev, port)
	return ""
}

func (n *host) verbsEntry(t *testing.T, dev string) string {
	t.Helper()
	dir := filepath.Join(n.h.SysRoot(), "class", "infiniband_verbs")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "ibdev")); err == nil && strings.TrimSpace(string(b)) == dev {
			return e.Name()
		}
	}
	t.Fatalf("no uverbs entry for %s", dev)
	return ""
}

// TestSanity_DevInfiniband proves DESIGN.md section 7 "/dev/infiniband
// char devices present", mapped to devices through class/infiniband_verbs
// and class/infiniband_mad (DESIGN.md field facts), on a DGX H100: 8 IB
// compute NICs, 4 RoCE storage functions, a RoCE management NIC and VFs.
func TestSanity_DevInfiniband(t *testing.T) {
	type want struct {
		dev  string
		port int
		text string
	}
	cases := []struct {
		name  string
		issm  bool
		fault func(t *testing.T, n *host)
		want  []want
	}{
		{name: "healthy", issm: true},
		{name: "uverbs node missing", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.DevRoot(), "infiniband", n.verbsEntry(t, "mlx5_3")))
		}, want: []want{{"mlx5_3", 0, "/infiniband/uverbs3 is missing although infiniband_verbs/uverbs3 exists: check that the rdma-core udev rules"}}},
		{name: "uverbs class entry missing", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_verbs", n.verbsEntry(t, "mlx5_8")))
		}, want: []want{{"mlx5_8", 0, "NIC mlx5_8 has no verbs character device (uverbs; no entry of "}}},
		{name: "ib_uverbs not loaded", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_verbs"))
		}, want: []want{
			{"mlx5_0", 0, "infiniband_verbs does not exist): RDMA applications cannot open it; load ib_uverbs (modprobe ib_uverbs)"},
			{"mlx5_1", 0, ""}, {"mlx5_10", 0, ""}, {"mlx5_11", 0, ""}, {"mlx5_2", 0, ""}, {"mlx5_3", 0, ""}, {"mlx5_4", 0, ""},
			{"mlx5_5", 0, ""}, {"mlx5_6", 0, ""}, {"mlx5_7", 0, ""}, {"mlx5_8", 0, ""}, {"mlx5_9", 0, ""},
		}},
		{name: "umad node missing", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.DevRoot(), "infiniband", n.madEntry(t, "umad", "mlx5_5", 1)))
		}, want: []want{{"mlx5_5", 1, "Port mlx5_5 port 1: character device "}}},
		{name: "umad class entry missing", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", n.madEntry(t, "umad", "mlx5_10", 1)))
		}, want: []want{{"mlx5_10", 1, "Port mlx5_10 port 1 has no umad character device (no entry of "}}},
		{name: "ib_umad not loaded", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad"))
		}, want: []want{
			{"mlx5_0", 1, "infiniband_mad does not exist): the subnet manager and diagnostics (ibstat, perfquery) cannot reach it; load ib_umad (modprobe ib_umad)"},
			{"mlx5_1", 1, ""}, {"mlx5_10", 1, ""}, {"mlx5_11", 1, ""}, {"mlx5_2", 1, ""}, {"mlx5_3", 1, ""}, {"mlx5_4", 1, ""},
			{"mlx5_5", 1, ""}, {"mlx5_6", 1, ""}, {"mlx5_7", 1, ""}, {"mlx5_8", 1, ""}, {"mlx5_9", 1, ""},
		}},
		{name: "issm missing is ignored unless opted in", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", n.madEntry(t, "issm", "mlx5_1", 1)))
		}},
		{name: "issm missing when opted in", issm: true, fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", n.madEntry(t, "issm", "mlx5_1", 1)))
		}, want: []want{{"mlx5_1", 1, "has no issm character device"}}},
		{name: "issm node missing when opted in", issm: true, fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.DevRoot(), "infiniband", n.madEntry(t, "issm", "mlx5_1", 1)))
		}, want: []want{{"mlx5_1", 1, "is missing although infiniband_mad/issm"}}},
		{name: "management NIC and VFs are not checked", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_verbs", n.verbsEntry(t, "mlx5_12")))
			remove(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_verbs", n.verbsEntry(t, "mlx5_13")))
		}},
		{name: "/dev/infiniband not mounted", fault: func(t *testing.T, n *host) {
			remove(t, filepath.Join(n.h.DevRoot(), "infiniband"))
		}, want: []want{
			{"mlx5_0", 0, "uverbs0 is missing"}, {"mlx5_0", 1, "umad"}, {"mlx5_1", 0, ""}, {"mlx5_1", 1, ""},
			{"mlx5_10", 0, ""}, {"mlx5_10", 1, ""}, {"mlx5_11", 0, ""}, {"mlx5_11", 1, ""}, {"mlx5_2", 0, ""}, {"mlx5_2", 1, ""},
			{"mlx5_3", 0, ""}, {"mlx5_3", 1, ""}, {"mlx5_4", 0, ""}, {"mlx5_4", 1, ""}, {"mlx5_5", 0, ""}, {"mlx5_5", 1, ""},
			{"mlx5_6", 0, ""}, {"mlx5_6", 1, ""}, {"mlx5_7", 0, ""}, {"mlx5_7", 1, ""}, {"mlx5_8", 0, ""}, {"mlx5_8", 1, ""},
			{"mlx5_9", 0, ""}, {"mlx5_9", 1, ""},
		}},
		{name: "unlistable class says nothing", fault: func(t *testing.T, n *host) {
			// A file where the class directory should be: listing fails with
			// something other than "does not exist".
			dir := filepath.Join(n.h.SysRoot(), "class", "infiniband_verbs")
			remove(t, dir)
			mkfile(t, dir, "")
		}},
		{name: "vanished class entries are skipped", fault: func(t *testing.T, n *host) {
			mkfile(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", "umad99", "port"), "1\n")
			mkfile(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", "umad98", "ibdev"), "mlx5_0\n")
			mkfile(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", "umad97", "ibdev"), "mlx5_0\n")
			mkfile(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", "umad97", "port"), "one\n")
			mkfile(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", "weird", "ibdev"), "mlx5_0\n")
			mkfile(t, filepath.Join(n.h.SysRoot(), "class", "infiniband_mad", "weird", "port"), "1\n")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := buildHost(t, "dgx-h100")
			if c.fault != nil {
				c.fault(t, n)
			}
			got := CharDevices(n.h.Paths(), n.devs, c.issm)
			if len(got) != len(c.want) {
				t.Fatalf("%d findings, want %d:\n%+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				f := got[i]
				if f.Device != w.dev || f.Port != w.port || f.Kind != KindCharDevice || !strings.Contains(f.Message, w.text) {
					t.Errorf("finding %d = %+v\nwant %s port %d containing %q", i, f, w.dev, w.port, w.text)
				}
			}
		})
	}
}

// A relocated sysfs (sysClassInfinibandPath) is followed: the character
// device classes are read next to class/infiniband, not under /sys.
func TestSanity_DevInfinibandRelocatedClass(t *testing.T) {
	n := buildHost(t, "minimal")
	p := topology.Paths{ClassInfiniBand: filepath.Join(n.h.SysRoot(), "class", "infiniband"), DevRoot: n.h.DevRoot(), SysfsRoot: "/nonexistent"}
	if got := CharDevices(p, n.devs, true); len(got) != 0 {
		t.Fatalf("got %+v", got)
	}
}
