package sanity

import (
	"fmt"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// BenchmarkRun_DGXH100 is the daemon's once-a-minute pass with every check
// on: PCIe and character devices read files, the rest is arithmetic.
func BenchmarkRun_DGXH100(b *testing.B) {
	n := buildHost(b, "dgx-h100")
	opts := Options{PCIe: true, RateVsPeers: true, SMLID: true, CharDevices: true, ISSM: true}
	p := n.h.Paths()
	b.ResetTimer()
	for b.Loop() {
		if fs := Run(p, n.devs, nil, opts); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkPerPoll_1024Ports is what the daemon pays on every poll: SMLID
// and RateVsPeers over every port of a large node, no file read.
func BenchmarkPerPoll_1024Ports(b *testing.B) {
	var ports []PortRate
	for i := 0; i < 1024; i++ {
		ports = append(ports, PortRate{Device: fmt.Sprintf("mlx5_%d", i/2), Port: i%2 + 1, Role: topology.RoleCompute,
			LinkLayer: topology.LinkLayerInfiniBand, HCAType: "MT4129", Gbps: 400, Active: true})
	}
	up := linkOf("4: ACTIVE")
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range ports {
			if SMLID(p.Device, p.Port, p.LinkLayer, up, "0x1") != nil {
				b.Fatal("finding")
			}
		}
		if len(RateVsPeers(ports)) != 0 {
			b.Fatal("finding")
		}
	}
}

// BenchmarkRoCEGIDs_DGXH100 is the GID table check of the daemon's
// once-a-minute pass over dgx-h100's four RoCE ports (8 entries each, 4 in
// use: a gids/ listing, 8 GID reads and 8 type/netdev reads per port).
func BenchmarkRoCEGIDs_DGXH100(b *testing.B) {
	n := buildHost(b, "dgx-h100")
	opts := Options{RoCEGID: true}
	p := n.h.Paths()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if fs := Run(p, n.devs, nil, opts); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}
