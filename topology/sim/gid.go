package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// gidTableSize is how many GID entries a simulated RoCE port lists: the
// link-local and IPv4-mapped pairs, then unused (all-zero) entries, as a
// real table has (mlx5 lists 255).
const gidTableSize = 8

// ZeroGID is an unused GID table entry as sysfs prints it.
const ZeroGID = "0000:0000:0000:0000:0000:0000:0000:0000"

type gidEntry struct{ gid, typ, ndev string }

// roceGIDs is a RoCE port's GID table as the RDMA core fills it (seed 9.1):
// a RoCE v1 and a RoCE v2 entry for the netdev's IPv6 link-local address
// and for its IPv4 address (derived from the MAC here), the rest unused.
func roceGIDs(mac, netdev string) []gidEntry {
	var m [6]byte
	fmt.Sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5])
	ll := "fe80:0000:0000:0000:" + eui64(mac)
	v4 := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:0a%02x:%02x%02x", m[3], m[4], m[5])
	out := []gidEntry{{ll, "IB/RoCE v1", netdev}, {ll, "RoCE v2", netdev}, {v4, "IB/RoCE v1", netdev}, {v4, "RoCE v2", netdev}}
	for len(out) < gidTableSize {
		out = append(out, gidEntry{gid: ZeroGID})
	}
	return out
}

// writeGIDs writes a port's table into the tree being built. Unused
// entries have no types/ndevs file (the kernel answers EINVAL there).
func (w *treeWriter) writeGIDs(pd string, table []gidEntry) {
	for i, e := range table {
		w.file(fmt.Sprintf("%s/gids/%d", pd, i), e.gid+"\n")
		if e.gid == ZeroGID {
			continue
		}
		w.file(fmt.Sprintf("%s/gid_attrs/types/%d", pd, i), e.typ+"\n")
		w.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", pd, i), e.ndev+"\n")
	}
}

// GID table states SetGIDTable accepts.
const (
	GIDTableOK     = "ok"      // the table the RDMA core fills
	GIDTableNoV2   = "no-v2"   // RoCE v1 entries only (seed 9.1: routing issues for RoCE v2)
	GIDTableNoIPv4 = "no-ipv4" // link-local entries only (seed 9.1: missing IPv4 GIDs)
	GIDTableEmpty  = "empty"   // every entry unused (seed 9.1: error 61 at QP setup)
)

// SetGIDTable rewrites a RoCE port's GID table (gids/, gid_attrs/types,
// gid_attrs/ndevs) to one of the states above.
func (h *Host) SetGIDTable(dev string, port int, state string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(dev)
	if err != nil {
		return err
	}
	if d.LinkLayer != eth {
		return fmt.Errorf("%s is not a RoCE device: its GID table comes from the subnet manager", dev)
	}
	pd, err := h.portPathLocked(dev, port, "")
	if err != nil {
		return err
	}
	netdev := d.NetDevs[port-1]
	nd, err := h.netdevFile(netdev, "address")
	if err != nil {
		return err
	}
	mac, err := os.ReadFile(nd)
	if err != nil {
		return fmt.Errorf("%s port %d: read the MAC of %s: %w", dev, port, netdev, err)
	}
	table := roceGIDs(strings.TrimSpace(string(mac)), netdev)
	switch state {
	case GIDTableOK:
	case GIDTableNoV2:
		for i := range table {
			if table[i].typ == "RoCE v2" {
				table[i] = gidEntry{gid: ZeroGID}
			}
		}
	case GIDTableNoIPv4:
		for i := range table {
			if strings.HasPrefix(table[i].gid, "0000:0000:0000:0000:0000:ffff:") {
				table[i] = gidEntry{gid: ZeroGID}
			}
		}
	case GIDTableEmpty:
		for i := range table {
			table[i] = gidEntry{gid: ZeroGID}
		}
	default:
		return fmt.Errorf("unknown GID table state %q (one of %s, %s, %s, %s)", state, GIDTableOK, GIDTableNoV2, GIDTableNoIPv4, GIDTableEmpty)
	}
	for i, e := range table {
		if err := writeAtomic(h.Root, filepath.Join(pd, "gids", fmt.Sprint(i)), []byte(e.gid+"\n")); err != nil {
			return err
		}
		for _, a := range []struct{ dir, v string }{{"types", e.typ}, {"ndevs", e.ndev}} {
			p := filepath.Join(pd, "gid_attrs", a.dir, fmt.Sprint(i))
			if e.gid == ZeroGID {
				if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
					return fmt.Errorf("%s port %d: %w", dev, port, err)
				}
				continue
			}
			if err := writeAtomic(h.Root, p, []byte(a.v+"\n")); err != nil {
				return err
			}
		}
	}
	return nil
}
