package sanity

import (
	"slices"
	"sort"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Finding kinds. They are stable: the daemon keys events and D-Bus
// properties by them, and scripts match on them in nichealthctl --json.
const (
	KindPCIeSpeed      = "pcie-speed"
	KindPCIeWidth      = "pcie-width"
	KindSMLID          = "sm-lid"
	KindCharDevice     = "char-device"
	KindRateBelowPeers = "rate-below-peers"
	// A bridge or switch port on a NIC's path whose link runs below what
	// both of its ends support (pcipath.go).
	KindPCIePathSpeed = "pcie-path-speed"
	KindPCIePathWidth = "pcie-path-width"
)

// Finding is one thing about a NIC's link that is not as it should be.
// Port 0 means the finding is about the whole device (PCIe, verbs node).
type Finding struct {
	Device   string            `json:"device"`
	Port     int               `json:"port"`
	Kind     string            `json:"kind"`
	Message  string            `json:"message"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// PCI and Below are set on a PCIe path finding: the bridge or switch
	// port whose link is slow, and every monitored NIC below it (Device is
	// the first of them).
	PCI   string   `json:"pci,omitempty"`
	Below []string `json:"below,omitempty"`
}

// AppliesTo reports whether the finding concerns port of device: its own
// port, or every port of its device when it is device-wide (Port 0), so a
// per-port view (the D-Bus Sanity property, a plugin line) shows a PCIe
// problem on each port it slows down.
func (f Finding) AppliesTo(device string, port int) bool {
	return f.Device == device && (f.Port == 0 || f.Port == port) || slices.Contains(f.Below, device)
}

// Options selects the checks Run performs. ISSM is opt-in because some
// platforms ship without issm nodes by design (DESIGN.md field facts).
type Options struct {
	PCIe, RateVsPeers, SMLID, CharDevices, ISSM bool
	// RoCEGID checks the GID table of every ACTIVE RoCE port (seed 9.1).
	RoCEGID bool
	// Read reads attribute files; nil is os.ReadFile. The daemon passes
	// its deadline-bounded reader, so a hung attribute costs one deadline.
	Read topology.ReadFunc
}

// Live is what the poll last read of a port: its link, its rate and its
// sm_lid.
type Live struct {
	Link  sysfs.Link
	Gbps  float64
	SMLID string
}

// DiscoveredLive is what discovery read of the port: its state,
// phys_state, rate and sm_lid, parsed. An unreadable rate gives 0 Gb/s;
// an unreadable state a Link that is not up.
func DiscoveredLive(_ *topology.Device, p *topology.Port) Live {
	s, _ := sysfs.ParseState([]byte(p.State))
	ph, _ := sysfs.ParsePhysState([]byte(p.PhysState))
	lv := Live{Link: sysfs.Link{State: s, Phys: ph}, SMLID: p.SMLID}
	if r, err := sysfs.ParseRate([]byte(p.Rate)); err == nil {
		lv.Gbps = r.Gbps
	}
	return lv
}

// Run performs every selected check on the monitored devices of devs
// (d.Monitored(): Mellanox PFs that are not management) and returns the
// findings ordered by device (in devs order), then port, device-wide
// findings first. live gives each port's current link, rate and sm_lid;
// nil means DiscoveredLive.
//
// Run reports health, not I/O trouble: a PCIe attribute that exists but
// cannot be read or parsed produces no finding here (call PCIe to see the
// error).
func Run(p topology.Paths, devs []*topology.Device, live func(d *topology.Device, port *topology.Port) Live, opts Options) []Finding {
	if live == nil {
		live = DiscoveredLive
	}
	var out []Finding
	var rates []PortRate
	order := map[string]int{}
	var monitored []*topology.Device
	linkRead := passRead(opts.Read)
	for _, d := range devs {
		if d == nil || !d.Monitored() {
			continue
		}
		order[d.Name] = len(order)
		monitored = append(monitored, d)
		if opts.PCIe {
			if f, err := pcieWith(d, linkRead); err == nil && f != nil {
				out = append(out, *f)
			}
		}
		for i := range d.Ports {
			port := &d.Ports[i]
			lv := live(d, port)
			if opts.SMLID {
				if f := SMLID(d.Name, port.Num, port.LinkLayer, lv.Link, lv.SMLID); f != nil {
					out = append(out, *f)
				}
			}
			if opts.RoCEGID && port.LinkLayer == topology.LinkLayerEthernet && lv.Link.Up() {
				if f := RoCEGIDs(d.Name, port.Num, port.Dir, d.NetDevFor(port.Num), opts.Read); f != nil {
					out = append(out, *f)
				}
			}
			if opts.RateVsPeers {
				rates = append(rates, PortRate{Device: d.Name, Port: port.Num, Role: d.Role, LinkLayer: port.LinkLayer,
					HCAType: d.HCAType, Gbps: lv.Gbps, Active: lv.Link.Up()})
			}
		}
	}
	if opts.PCIe {
		out = append(out, pciePathWith(p.SysfsRoot, monitored, linkRead)...)
	}
	if opts.CharDevices {
		out = append(out, charDevicesWith(p, monitored, opts.ISSM, opts.Read)...)
	}
	if opts.RateVsPeers {
		out = append(out, RateVsPeers(rates)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if oi, oj := order[out[i].Device], order[out[j].Device]; oi != oj {
			return oi < oj
		}
		return out[i].Port < out[j].Port
	})
	return out
}
