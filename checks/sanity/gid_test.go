package sanity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim"
)

// TestLinkState_9_1_RoCEGIDTable: an ACTIVE RoCE port's GID table must
// hold a RoCE v2 entry for its netdev (seed 9.1 "Missing IPv4 GIDs →
// routing issues for RoCE v2"; DESIGN.md difference 16); an empty table
// is "Error 61 (ENODATA) during QP setup". Both are findings; a table that
// cannot be read says nothing.
func TestLinkState_9_1_RoCEGIDTable(t *testing.T) {
	n := buildHost(t, "dgx-h100")
	d := n.dev(t, "mlx5_8")
	port := d.Port(1)
	nd := d.NetDevFor(1)
	for _, tc := range []struct {
		state string
		want  string // "" = no finding
	}{
		{sim.GIDTableOK, ""},
		// Link-local RoCE v2 entries remain: a v2 entry for the netdev
		// exists, and without the netdev's addresses an IPv6-only fabric
		// cannot be told from a missing IPv4 address.
		{sim.GIDTableNoIPv4, ""},
		{sim.GIDTableNoV2, "has no RoCE v2 entry for the addresses of " + nd + " (2 entries in use, 2 RoCE v1)"},
		{sim.GIDTableEmpty, "its GID table is empty, so every RDMA connection fails at QP setup with error 61 (ENODATA)"},
	} {
		t.Run(tc.state, func(t *testing.T) {
			if err := n.h.SetGIDTable("mlx5_8", 1, tc.state); err != nil {
				t.Fatal(err)
			}
			f := RoCEGIDs("mlx5_8", 1, port.Dir, nd, nil)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("finding %+v", f)
				}
				return
			}
			if f == nil || f.Kind != KindRoCEGID || f.Device != "mlx5_8" || f.Port != 1 || !strings.Contains(f.Message, tc.want) ||
				!strings.Contains(f.Message, "ip addr show "+nd) {
				t.Fatalf("finding %+v, want %q", f, tc.want)
			}
		})
	}
	n.h.SetGIDTable("mlx5_8", 1, sim.GIDTableOK)
	// RoCE v2 entries of another netdev do not count.
	if f := RoCEGIDs("mlx5_8", 1, port.Dir, "some-other0", nil); f == nil || !strings.Contains(f.Message, "some-other0") {
		t.Fatalf("v2 entries of another netdev counted: %+v", f)
	}
	// Unreadable: nothing to conclude.
	if f := RoCEGIDs("mlx5_8", 1, filepath.Join(t.TempDir(), "nope"), nd, nil); f != nil {
		t.Fatalf("unlistable table judged: %+v", f)
	}
	failing := func(string) ([]byte, error) { return nil, os.ErrPermission }
	if f := RoCEGIDs("mlx5_8", 1, port.Dir, nd, failing); f != nil {
		t.Fatalf("unreadable table judged: %+v", f)
	}
	// Run: only ACTIVE RoCE ports, when asked.
	n.h.SetGIDTable("mlx5_9", 1, sim.GIDTableEmpty)
	n.h.SetGIDTable("mlx5_10", 1, sim.GIDTableEmpty)
	n.h.SetPortState("mlx5_10", 1, "DOWN", "Disabled")
	n.rediscover(t)
	fs := Run(n.h.Paths(), n.monitored(), nil, Options{RoCEGID: true})
	if len(fs) != 1 || fs[0].Device != "mlx5_9" || fs[0].Kind != KindRoCEGID {
		t.Fatalf("Run findings %+v, want mlx5_9's only (mlx5_10 is DOWN)", fs)
	}
	if fs := Run(n.h.Paths(), n.monitored(), nil, Options{}); len(fs) != 0 {
		t.Fatalf("RoCEGID off: %+v", fs)
	}
}

// FuzzParseGID: any bytes give a GID (in use or not) or not a GID; a GID
// is eight groups of four hex digits.
func FuzzParseGID(f *testing.F) {
	for _, s := range []string{"fe80:0000:0000:0000:ba3f:d2ff:fec3:65c4\n", "0000:0000:0000:0000:0000:0000:0000:0000\n",
		"0000:0000:0000:0000:0000:ffff:0a33:ba20", "fe80::1", "", "zzzz:0000:0000:0000:0000:0000:0000:0000", "+001:0000:0000:0000:0000:0000:0000:0000"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		used, ok := ParseGID(b)
		if !ok && used {
			t.Fatalf("ParseGID(%q): in use but not a GID", b)
		}
		if ok {
			s := strings.TrimSpace(string(b))
			if len(s) != 39 || strings.Count(s, ":") != 7 {
				t.Fatalf("ParseGID(%q) accepted a malformed GID", b)
			}
			if used == (strings.Trim(strings.ReplaceAll(s, ":", ""), "0") == "") {
				t.Fatalf("ParseGID(%q): in use = %v", b, used)
			}
		}
	})
}
