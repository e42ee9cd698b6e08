package sanity

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// parseLID parses a LID as sysfs prints it ("0x1", "0x0"; some drivers
// print plain decimal). LIDs are 16 bits.
func parseLID(s string) (uint16, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 0, 16)
	if err != nil {
		return 0, false
	}
	return uint16(v), true
}

// SMLID checks that an up InfiniBand port knows its subnet manager
// (seed: "SM lid is set"). It reads no file, so it can run on every poll
// with what the poll already has. Outcomes:
//   - a finding: IB link layer, the link up (sysfs.Link.Up) and sm_lid
//     zero ("0x0", "0");
//   - nil: any other link layer (RoCE has no SM), a port that is not up
//     (no SM is expected yet, or the state check speaks for it), a
//     non-zero sm_lid, or an sm_lid that is empty or malformed (nothing
//     can be concluded).
func SMLID(dev string, port int, linkLayer string, link sysfs.Link, smlid string) *Finding {
	if linkLayer != topology.LinkLayerInfiniBand || !link.Up() {
		return nil
	}
	lid, ok := parseLID(smlid)
	if !ok || lid != 0 {
		return nil
	}
	raw := strings.TrimSpace(smlid)
	return &Finding{
		Device: dev, Port: port, Kind: KindSMLID,
		Message:  fmt.Sprintf("Port %s port %d is ACTIVE but has no subnet manager (sm_lid %s): check the SM", dev, port, raw),
		Metadata: map[string]string{"smLid": raw},
	}
}
