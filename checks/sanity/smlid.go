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

// SMLID checks that an ACTIVE InfiniBand port knows its subnet manager
// (seed: "SM lid is set"). It reads no file, so the daemon can call it on
// every poll with the strings it already has. Outcomes:
//   - a finding: IB link layer, state ACTIVE ("4: ACTIVE" or "ACTIVE") and
//     sm_lid zero ("0x0", "0");
//   - nil: any other link layer (RoCE has no SM), a port that is not
//     ACTIVE (no SM is expected yet), a non-zero sm_lid, or a state or
//     sm_lid that is empty or malformed (nothing can be concluded).
func SMLID(dev string, port int, linkLayer, state, smlid string) *Finding {
	if linkLayer != topology.LinkLayerInfiniBand {
		return nil
	}
	// The LID first: on a healthy fabric it is non-zero and the state
	// need not be parsed at all (this runs for every port on every poll).
	lid, ok := parseLID(smlid)
	if !ok || lid != 0 {
		return nil
	}
	s, err := sysfs.ParseState([]byte(state))
	if err != nil || s.ID != sysfs.StateActive {
		return nil
	}
	raw := strings.TrimSpace(smlid)
	return &Finding{
		Device: dev, Port: port, Kind: KindSMLID,
		Message:  fmt.Sprintf("Port %s port %d is ACTIVE but has no subnet manager (sm_lid %s): check the SM", dev, port, raw),
		Metadata: map[string]string{"smLid": raw},
	}
}
