package sanity

import (
	"fmt"
	"strconv"

	"github.com/nichealth/nichealthd/topology"
)

// PortRate is one port as the rate-vs-peers check sees it. HCAType is
// optional: when set, only ports of the same HCA type are peers (DESIGN.md
// field facts: compare like with like), so a 200G storage card is never
// measured against 400G compute cards of the same role.
type PortRate struct {
	Device    string
	Port      int
	Role      topology.Role
	LinkLayer string
	HCAType   string
	Gbps      float64
	Active    bool
}

type rateGroup struct {
	role      topology.Role
	linkLayer string
	hcaType   string
}

// RateVsPeers finds ports running slower than their peers (seed: "Link
// speed/width matches capability"). Peers are the ACTIVE ports with a
// known rate of the same role, link layer and HCA type; a group needs at
// least two. The reference is the most common rate of the group; when two
// rates are equally common the higher one is the reference, because links
// only ever train down from what both ends support, so on like hardware
// the slower half is the one that lost lanes or speed. Down ports are
// never compared: they report placeholder rates (10 Gb/sec on IB, 40 on
// Ethernet; DESIGN.md field facts). Findings keep the order of ports. It
// reads no file.
func RateVsPeers(ports []PortRate) []Finding {
	groups := map[rateGroup]map[float64]int{}
	size := map[rateGroup]int{}
	for _, p := range ports {
		if !p.Active || !(p.Gbps > 0) {
			continue
		}
		g := rateGroup{p.Role, p.LinkLayer, p.HCAType}
		if groups[g] == nil {
			groups[g] = map[float64]int{}
		}
		groups[g][p.Gbps]++
		size[g]++
	}
	ref := map[rateGroup]float64{}
	for g, counts := range groups {
		if size[g] < 2 {
			continue
		}
		best, n := 0.0, 0
		for rate, c := range counts {
			if c > n || (c == n && rate > best) {
				best, n = rate, c
			}
		}
		ref[g] = best
	}
	var out []Finding
	for _, p := range ports {
		if !p.Active || !(p.Gbps > 0) {
			continue
		}
		mode, ok := ref[rateGroup{p.Role, p.LinkLayer, p.HCAType}]
		if !ok || p.Gbps >= mode {
			continue
		}
		peers := "its peers"
		if p.Role != topology.RoleUnknown {
			peers = "its " + string(p.Role) + " peers"
		}
		out = append(out, Finding{
			Device: p.Device, Port: p.Port, Kind: KindRateBelowPeers,
			Message: fmt.Sprintf("Port %s port %d runs at %s Gb/s, %s at %s Gb/s: check the cable and the switch port",
				p.Device, p.Port, gbps(p.Gbps), peers, gbps(mode)),
			Metadata: map[string]string{
				"rateGbps": gbps(p.Gbps), "peerRateGbps": gbps(mode),
				"role": string(p.Role), "linkLayer": p.LinkLayer,
			},
		})
	}
	return out
}

func gbps(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
