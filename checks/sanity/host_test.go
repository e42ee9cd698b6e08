package sanity

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/roles"
	"github.com/nichealth/nichealthd/topology/sim"
)

// host is a simulated node, discovered and classified as the daemon does.
type host struct {
	h    *sim.Host
	devs []*topology.Device
}

func buildHost(t testing.TB, shape string) *host {
	t.Helper()
	dir, err := sim.MkdirTemp("sanity-" + shape + "-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h, err := sim.Build(filepath.Join(dir, "h"), shape)
	if err != nil {
		t.Fatal(err)
	}
	n := &host{h: h}
	n.rediscover(t)
	n.completeIBPorts(t)
	n.rediscover(t)
	return n
}

// completeIBPorts gives every ACTIVE InfiniBand port what a real one has
// and some simulator builds leave out (the IB-only branch of the tree
// writer is skipped there): a non-zero sm_lid and an issm entry beside its
// umad entry. It changes nothing on a tree that already has them.
func (n *host) completeIBPorts(t testing.TB) {
	t.Helper()
	mad := filepath.Join(n.h.SysRoot(), "class", "infiniband_mad")
	ents, err := os.ReadDir(mad)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		dev, port string
	}
	umad, issm := map[key]string{}, map[key]bool{}
	for _, e := range ents {
		ibdev, _ := os.ReadFile(filepath.Join(mad, e.Name(), "ibdev"))
		port, _ := os.ReadFile(filepath.Join(mad, e.Name(), "port"))
		k := key{strings.TrimSpace(string(ibdev)), strings.TrimSpace(string(port))}
		if num, ok := strings.CutPrefix(e.Name(), "umad"); ok {
			umad[k] = num
		} else if strings.HasPrefix(e.Name(), "issm") {
			issm[k] = true
		}
	}
	for _, d := range n.devs {
		for _, p := range d.Ports {
			if p.LinkLayer != topology.LinkLayerInfiniBand {
				continue
			}
			if strings.HasPrefix(p.State, "4") && p.SMLID == "0x0" {
				if err := n.h.WriteRaw(d.Name, p.Num, "sm_lid", "0x1\n"); err != nil {
					t.Fatal(err)
				}
			}
			k := key{d.Name, strconv.Itoa(p.Num)}
			if num, ok := umad[k]; ok && !issm[k] {
				mkfile(t, filepath.Join(mad, "issm"+num, "ibdev"), d.Name+"\n")
				mkfile(t, filepath.Join(mad, "issm"+num, "port"), k.port+"\n")
				mkfile(t, filepath.Join(n.h.DevRoot(), "infiniband", "issm"+num), "")
			}
		}
	}
}

// rediscover reads the tree again, as the daemon does after a change.
func (n *host) rediscover(t testing.TB) {
	t.Helper()
	devs, probs, err := topology.Discover(n.h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) > 0 {
		t.Fatalf("discovery problems: %v", probs)
	}
	m, err := gpumeta.Load(n.h.MetadataPath())
	if err != nil {
		t.Fatal(err)
	}
	routes, err := roles.DefaultRouteDevices(n.h.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if err := roles.Classify(devs, m, routes); err != nil {
		t.Fatal(err)
	}
	n.devs = devs
}

func (n *host) dev(t testing.TB, name string) *topology.Device {
	t.Helper()
	for _, d := range n.devs {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no device %s", name)
	return nil
}

// monitored lists the devices the daemon would read after discovery.
func (n *host) monitored() []*topology.Device {
	var out []*topology.Device
	for _, d := range n.devs {
		if d.Monitored() {
			out = append(out, d)
		}
	}
	return out
}

// writeFile replaces path atomically: the simulator hard-links files of
// equal content, so writing in place would change every one of them.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func remove(t testing.TB, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

func mkfile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
