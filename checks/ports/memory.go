package ports

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// PortMemoryVersion is the version of the port check's section of the
// state file this build writes.
const PortMemoryVersion = 1

// PortMemory is what the port state checks remember across restarts (seed
// 6.6 port_states and known devices, plus presence). The daemon stores it
// as the "ports" section of the state file; nothing else writes it.
type PortMemory struct {
	Version int `json:"version"`
	// PortStates is the last known state of each port, keyed
	// "<device>_<port>" (PortKey).
	PortStates   latch.Set[string, PortState] `json:"port_states"`
	KnownDevices []string                     `json:"known_devices"`
	// Disappeared lists the devices currently reported disappeared.
	Disappeared []string `json:"disappeared,omitempty"`
	// DeviceAddrs maps each known device to its PCI address, so a device
	// renamed under the same address (rdma dev set … name …, udev naming
	// changes) is recognised as the same NIC rather than a disappearance.
	DeviceAddrs map[string]string `json:"device_addrs,omitempty"`
	// Claimed lists the devices missing for DisappearAfter enumerations
	// whose loss another check reports as its one condition (the PCI
	// inventory, for a function still on the bus without its RDMA device:
	// DESIGN.md difference 18).
	Claimed []string `json:"claimed,omitempty"`
	// Identity is what the last discovery said of each known device, so
	// that a NIC that disappeared keeps its role and GPUs in every event
	// and view until it returns or the host reboots, across restarts.
	Identity map[string]Identity `json:"identity,omitempty"`
}

// Identity is a device's role and the GPUs behind it, as its last
// discovery classified it.
type Identity struct {
	Role       string `json:"role"`
	RoleReason string `json:"roleReason,omitempty"`
	GPUs       string `json:"gpus,omitempty"`
}

// maxIdentityBytes bounds each text of an Identity read back: a role
// reason and a GPU list are a few hundred bytes; more was not written
// by this daemon.
const maxIdentityBytes = 4096

// PortState is the last known state of a port (seed 6.6).
type PortState struct {
	State         string `json:"state"`
	PhysicalState string `json:"physical_state"`
	Device        string `json:"device"`
	Port          int    `json:"port"`
	LinkLayer     string `json:"link_layer,omitempty"`
	Operstate     string `json:"operstate,omitempty"`
	// Reported is the verdict of the state check's last event for the
	// port: ReportedFatal, ReportedNonFatal, or "" (healthy, or never
	// reported: unhealthy since first sight).
	Reported string `json:"reported,omitempty"`
}

// NewPortMemory returns an empty memory.
func NewPortMemory() *PortMemory {
	return &PortMemory{Version: PortMemoryVersion, PortStates: map[string]PortState{}, KnownDevices: []string{}}
}

// Validate makes a memory read from a state file usable: entries no check
// could have written are dropped and listed.
func (m *PortMemory) Validate() (dropped []string) {
	drop := func(format string, a ...any) { dropped = append(dropped, fmt.Sprintf(format, a...)) }
	m.Version = PortMemoryVersion
	if m.PortStates == nil {
		m.PortStates = map[string]PortState{}
	}
	dropped = m.PortStates.Keep("port_states", func(k string, v PortState) string {
		nv, why := checkPortState(k, v)
		if why == "" {
			m.PortStates[k] = nv
		}
		return why
	})
	m.KnownDevices = cleanDevices(m.KnownDevices, "known_devices", drop)
	if len(m.Disappeared) > 0 {
		m.Disappeared = cleanDevices(m.Disappeared, "disappeared", drop)
	}
	for d := range m.DeviceAddrs {
		if !topology.ValidDeviceName(d) {
			drop("device_addrs[%q]: not a device name", d)
			delete(m.DeviceAddrs, d)
		}
	}
	if len(m.Claimed) > 0 {
		m.Claimed = cleanDevices(m.Claimed, "claimed", drop)
	}
	for d, id := range m.Identity {
		switch {
		case !slices.Contains(m.KnownDevices, d):
			drop("identity[%q]: not a known device", d)
			delete(m.Identity, d)
		case len(id.Role) > maxIdentityBytes || len(id.RoleReason) > maxIdentityBytes || len(id.GPUs) > maxIdentityBytes ||
			!utf8.ValidString(id.Role+id.RoleReason+id.GPUs):
			drop("identity[%q]: not text this daemon writes", d)
			delete(m.Identity, d)
		}
	}
	sort.Strings(dropped)
	return dropped
}

func cleanDevices(in []string, field string, drop func(string, ...any)) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, d := range in {
		switch {
		case !topology.ValidDeviceName(d):
			drop("%s: %q is not a device name", field, d)
		case seen[d]:
			// Duplicates are harmless; drop them silently.
		default:
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// checkPortState validates a "<device>_<port>" entry against its value and
// fills a device or port the value left out. The section keeps seed 6.6's
// underscored key form (latch.ParseUnderscored) rather than the port
// key's "<device>/<port>": the seed names it, and every state file on
// disk is written in it.
func checkPortState(k string, v PortState) (PortState, string) {
	key, why := latch.ParseUnderscored(k)
	if why != "" {
		return v, why
	}
	dev, port := key.Device, key.Port
	if v.Port < 0 {
		return v, "negative port"
	}
	if v.Device == "" {
		v.Device = dev
	}
	if v.Port == 0 {
		v.Port = port
	}
	if v.Device != dev || v.Port != port {
		return v, fmt.Sprintf("key does not match device %q port %d", v.Device, v.Port)
	}
	if v.Reported != "" && v.Reported != ReportedFatal && v.Reported != ReportedNonFatal {
		return v, fmt.Sprintf("reported %q is not %q or %q", v.Reported, ReportedFatal, ReportedNonFatal)
	}
	return v, ""
}

// Rename moves every entry of device old to nw.
func (m *PortMemory) Rename(old, nw string) {
	for k, v := range m.PortStates {
		if v.Device == old {
			delete(m.PortStates, k)
			v.Device = nw
			m.PortStates[PortKey(nw, v.Port)] = v
		}
	}
	for _, list := range [][]string{m.Disappeared, m.Claimed} {
		for i, d := range list {
			if d == old {
				list[i] = nw
			}
		}
	}
	if a, ok := m.DeviceAddrs[old]; ok {
		delete(m.DeviceAddrs, old)
		m.DeviceAddrs[nw] = a
	}
	if id, ok := m.Identity[old]; ok {
		delete(m.Identity, old)
		m.Identity[nw] = id
	}
}

// Gone reports whether device is missing and its loss reported, by the
// port check (Disappeared) or by the check that claimed it (Claimed).
func (m *PortMemory) Gone(device string) bool {
	return slices.Contains(m.Disappeared, device) || slices.Contains(m.Claimed, device)
}

// NICAt is the known device that had PCI address addr this boot ("" when
// none), its last known ports, and whether the port check reported it
// disappeared.
func (m *PortMemory) NICAt(addr string) (device string, ports []event.PortRef, reported bool) {
	if addr == "" {
		return "", nil, false
	}
	for _, d := range m.KnownDevices {
		if m.DeviceAddrs[d] == addr {
			device = d
			break
		}
	}
	if device == "" {
		return "", nil, false
	}
	for _, ps := range m.PortStates {
		if ps.Device == device {
			ports = append(ports, event.PortRef{Device: device, Port: ps.Port})
		}
	}
	slices.SortFunc(ports, func(a, b event.PortRef) int { return a.Port - b.Port })
	return device, ports, slices.Contains(m.Disappeared, device)
}

// Replay applies an event the state checks emitted but whose effect the
// saved memory may not include (the outbox is written before the state).
// The first poll then corrects it if the hardware has moved on since.
func (m *PortMemory) Replay(e *event.Event) {
	dev := e.Device()
	port, _ := strconv.Atoi(e.Port())
	switch e.Kind {
	case event.KindPortFatal, event.KindPortNonFatal, event.KindPortRecovered, event.KindPortBaseline:
		s, err1 := sysfs.ParseState([]byte(e.Metadata["state"]))
		p, err2 := sysfs.ParsePhysState([]byte(e.Metadata["physState"]))
		if err1 != nil || err2 != nil || dev == "" || port <= 0 {
			return
		}
		ps := snapshotOf(Observation{Device: dev, Port: port, LinkLayer: e.Metadata["linkLayer"],
			State: s, Phys: p, Operstate: e.Metadata["operstate"]})
		switch {
		case e.IsFatal:
			ps.Reported = ReportedFatal
		case !e.IsHealthy:
			ps.Reported = ReportedNonFatal
		}
		m.PortStates[PortKey(dev, port)] = ps
	case event.KindDeviceDisappeared:
		if dev != "" && !slices.Contains(m.Disappeared, dev) {
			m.Disappeared = append(m.Disappeared, dev)
		}
		if dev != "" && !slices.Contains(m.KnownDevices, dev) {
			m.KnownDevices = append(m.KnownDevices, dev)
		}
	case event.KindDeviceReappeared:
		m.Disappeared = slices.DeleteFunc(m.Disappeared, func(s string) bool { return s == dev })
	}
}

// GoneByCard counts, per card, the ports of its NICs that are reported
// gone: each is fatal on its own (device-disappeared, or the condition of
// the check that claimed the loss), so card homogeneity does not report
// them a second time.
func (m *PortMemory) GoneByCard() map[string]int { return m.goneByCard(nil) }

// goneByCard is GoneByCard with the devices of missing counted too.
func (m *PortMemory) goneByCard(missing map[string]int) map[string]int {
	if len(m.Disappeared)+len(m.Claimed)+len(missing) == 0 {
		return nil
	}
	gone := slices.Concat(m.Disappeared, m.Claimed)
	for dev := range missing {
		if !slices.Contains(gone, dev) {
			gone = append(gone, dev)
		}
	}
	out := map[string]int{}
	for _, dev := range gone {
		card := CardOfAddress(m.DeviceAddrs[dev])
		if card == "" {
			continue
		}
		n := 0
		for _, ps := range m.PortStates {
			if ps.Device == dev {
				n++
			}
		}
		out[card] += max(n, 1)
	}
	return out
}

// CardOfAddress is the card key (domain:bus:device) of a PCI address.
func CardOfAddress(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return ""
}
