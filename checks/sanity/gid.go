package sanity

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// KindRoCEGID is a RoCE port whose GID table cannot carry RoCE v2 (seed
// state 9.1, DESIGN.md difference 16).
const KindRoCEGID = "roce-gid"

// ParseGID parses a gids/<n> value ("fe80:0000:0000:0000:ba3f:d2ff:fec3:65c4",
// eight groups of four hex digits) and reports whether it is a GID and
// whether it is in use (not all zero: the kernel lists unused entries as
// zeros).
func ParseGID(b []byte) (used, ok bool) {
	s := string(sysfs.TrimValue(b))
	groups := strings.Split(s, ":")
	if len(groups) != 8 {
		return false, false
	}
	for _, g := range groups {
		if len(g) != 4 {
			return false, false
		}
		v, err := strconv.ParseUint(g, 16, 16)
		if err != nil {
			return false, false
		}
		if v != 0 {
			used = true
		}
	}
	return used, true
}

// gidTypeV2 is how gid_attrs/types/<n> names a RoCE v2 entry.
const gidTypeV2 = "RoCE v2"

// RoCEGIDs checks the GID table of an ACTIVE RoCE port (seed 9.1): RoCE v2
// traffic is addressed by the RoCE v2 GIDs the RDMA core derives from the
// netdev's IP addresses, so a table with none for the port's netdev cannot
// route it, and an empty table fails every QP setup with error 61
// (ENODATA). Only used entries have types and ndevs worth reading (the
// kernel answers EINVAL for unused ones, which must not be read every
// pass). Outcomes:
//   - a finding: no entry in use ("empty"), or entries in use but none of
//     type RoCE v2 on netdev (any netdev when netdev is "");
//   - nil: a RoCE v2 entry on netdev, or a table that cannot be listed or
//     read (nothing can be concluded: fail open).
func RoCEGIDs(dev string, port int, portDir, netdev string, read topology.ReadFunc) *Finding {
	if read == nil {
		read = os.ReadFile
	}
	ents, err := os.ReadDir(filepath.Join(portDir, "gids"))
	if err != nil || len(ents) == 0 {
		return nil
	}
	used, v1, unreadable := 0, 0, 0
	for _, e := range ents {
		idx := e.Name()
		b, err := read(filepath.Join(portDir, "gids", idx))
		if err != nil {
			unreadable++
			continue
		}
		inUse, ok := ParseGID(b)
		if !ok {
			unreadable++
			continue
		}
		if !inUse {
			continue
		}
		used++
		tb, err := read(filepath.Join(portDir, "gid_attrs", "types", idx))
		if err != nil {
			continue
		}
		if !strings.EqualFold(string(sysfs.TrimValue(tb)), gidTypeV2) {
			v1++
			continue
		}
		if netdev == "" {
			return nil
		}
		nb, err := read(filepath.Join(portDir, "gid_attrs", "ndevs", idx))
		if err == nil && string(sysfs.TrimValue(nb)) == netdev {
			return nil
		}
	}
	if unreadable > 0 && used == 0 {
		return nil // nothing read: no conclusion
	}
	nd := netdev
	if nd == "" {
		nd = "its netdev"
	}
	md := map[string]string{"gidsInUse": strconv.Itoa(used), "netdev": netdev}
	if used == 0 {
		return &Finding{Device: dev, Port: port, Kind: KindRoCEGID, Metadata: md,
			Message: fmt.Sprintf("RoCE port %s port %d: its GID table is empty, so every RDMA connection fails at QP setup with error 61 (ENODATA): "+
				"check that %s is up with an IP address (ip addr show %s) and that the RDMA core sees it (rdma link show)", dev, port, nd, nd)}
	}
	return &Finding{Device: dev, Port: port, Kind: KindRoCEGID, Metadata: md,
		Message: fmt.Sprintf("RoCE port %s port %d: its GID table has no RoCE v2 entry for the addresses of %s (%d entries in use, %d RoCE v1), so RoCE v2 traffic cannot be routed: "+
			"check the addresses of %s (ip addr show %s) and the RDMA CM's RoCE mode (/sys/kernel/config/rdma_cm, rdma link show)", dev, port, nd, used, v1, nd, nd)}
}
