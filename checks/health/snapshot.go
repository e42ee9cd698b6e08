package health

import (
	"fmt"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Node is what the daemon says about itself alongside the verdict.
type Node struct {
	Version      string        `json:"version"`
	NodeName     string        `json:"nodeName"`
	BootID       string        `json:"bootID"`
	PollInterval time.Duration `json:"pollInterval"`
	// FarEndInterval is how often the far end's counters are read; 0
	// while the far end is off. The staleness rule (NICPeerPortUnread)
	// judges a read's age against it, not against the default.
	FarEndInterval   time.Duration `json:"farEndInterval,omitempty"`
	ConfigPath       string        `json:"configPath"`
	ConfigGeneration uint64        `json:"configGeneration"`
	LastReloadError  string        `json:"lastReloadError"`
	Ready            bool          `json:"ready"`
}

// Counter is one monitored counter of a port as last read and judged.
type Counter struct {
	Name          string    `json:"name"`
	Value         uint64    `json:"value"`
	Rate          float64   `json:"rate"`
	Unit          string    `json:"unit"` // "sec", "min" or "hour"
	ThresholdType string    `json:"thresholdType"`
	Threshold     float64   `json:"threshold"`
	Fatal         bool      `json:"fatal"`
	Breached      bool      `json:"breached"`
	BreachedSince time.Time `json:"breachedSince"`
	// Latched is what the counter's latched breach says while it holds:
	// what latched, when, and its reading at the breach (Rate is the live
	// one). Build gives it to the breach's condition.
	Latched     string  `json:"latched,omitempty"`
	Saturated   bool    `json:"saturated"`
	LostGbps    float64 `json:"lostGbps"`
	LostPercent float64 `json:"lostPercent"`
}

// PortInfo is what the daemon observed of a port: identity and the last
// reading, no verdict.
type PortInfo struct {
	Device     string
	Port       int
	Card       string
	LinkLayer  string
	Role       string
	RoleReason string
	NetDev     string
	PCIAddress string
	NUMANode   int
	// Link is the port's last reading, typed (zero before the first
	// reading and for a missing NIC's port): what every view judges "up"
	// by (Link.Up). State and PhysState are its names as the views print
	// them ("" before the first reading, "MISSING" for a missing NIC's
	// port).
	Link      sysfs.Link
	State     string
	PhysState string
	// RateGbps is the port's rate in Gb/s (0 when unknown); Rate is how
	// sysfs printed it.
	RateGbps float64
	Rate     string
	// Missing: the port's NIC is absent from the last enumeration.
	Missing bool
	// HealthyMessage describes the port when no condition covers it.
	HealthyMessage string
	LastChange     time.Time
	Counters       []Counter
	// GPUs are the GPUs behind the port's NIC (PIX/PXB in the matrix), or
	// "no GPU affinity".
	GPUs string
	// NodeGUID and PortGUID identify the port in the fabric, as
	// ibnetdiscover prints them ("0xb83fd20300a0b010"), so a fleet view can
	// join it to a fabric dump by GUID rather than by name; "" when sysfs
	// did not say.
	NodeGUID string
	PortGUID string
	// LinkDownEpisodes counts the port's link-down episodes this boot, as
	// the flap rule counts them (checks/rules).
	LinkDownEpisodes uint64
	// FWVer and BoardID are the NIC's firmware version and PSID (the card
	// model), which the inventory's drift finding compares.
	FWVer   string
	BoardID string
	// LinkDownReason is why a RoCE port's link is down, as its driver
	// said when it left ACTIVE ("cable issue: unsupported cable"; "" while
	// up or when nothing was said).
	LinkDownReason string
	// Peer is the far end of an InfiniBand port (nil when not read).
	Peer *Peer
	// RoCE is a RoCE port's congestion and loss classes (nil when the
	// port is not judged: InfiniBand, or [roce] off).
	RoCE *RoCE
	// Cable is the port's cable verdict (DESIGN.md section 15), judged
	// once per cycle; zero for a missing NIC's port.
	Cable Cable
}

// Cable is a port's cable verdict as every view shows it: which way
// errors flow across its cable, the part to replace first, and why.
type Cable struct {
	// Direction is none, to-host, from-host or both; Suspect
	// host-transceiver, peer-transceiver, cable, host-port, unknown or
	// "" (nothing to suspect).
	Direction string `json:"direction"`
	Suspect   string `json:"suspect,omitempty"`
	// Part names the suspect in words ("host transceiver (serial X)",
	// "cable (lane 2 fibre)"); Serial is our module's serial when it is
	// the suspect, Lane the lane that points at a fibre.
	Part   string `json:"part,omitempty"`
	Serial string `json:"serial,omitempty"`
	Lane   int    `json:"lane,omitempty"`
	// Evidence are the counters, lanes and reason behind it, each in a
	// few words; Missing says which half of an InfiniBand port's
	// evidence was not read ("" both were).
	Evidence []string `json:"evidence,omitempty"`
	Missing  string   `json:"missing,omitempty"`
}

// Said reports whether the verdict says anything (a clean port's does
// not).
func (c Cable) Said() bool { return (c.Direction != "" && c.Direction != "none") || c.Suspect != "" }

// Peer is the far end of an InfiniBand port: the node at the other end of
// its cable, as it describes itself to a directed-route SMP, and what its
// port counts (DESIGN.md section 13).
type Peer struct {
	// GUID is the peer's node GUID and PortGUID its port's, as
	// ibnetdiscover prints them; Port the peer's port number, LID the LID
	// its PMA answers at.
	GUID     string
	PortGUID string
	Port     int
	LID      int
	// Name is the node-name map's name, or the NodeDescription.
	Name        string
	Description string
	Switch      bool
	// Found says the peer answered its last discovery; ReadAt is when its
	// counters were last read (zero: not yet); Err why the last attempt
	// failed ("" when it did not). A peer that stopped answering keeps its
	// identity and last counters (Found false, ReadAt old): the views age
	// them instead of dropping them. ReadErrors counts the failed
	// attempts since the daemon started.
	Found      bool
	ReadAt     time.Time
	Err        string
	ReadErrors uint64
	// Counters are its PortCounters fields, in wire order.
	Counters []PeerCounter
}

// PeerCounter is one PortCounters field of a far end.
type PeerCounter struct {
	// Field is the PMA name ("SymbolErrorCounter").
	Field string
	Value uint64
	// Bits is the field's width (64 when read from PortCountersExtended).
	Bits int
	// Judged says a row of the far-end table judges it; Latched are the
	// rows in breach ("symbol_error_fatal"); Saturated says it is stuck
	// at its maximum.
	Judged    bool
	Latched   []string
	Saturated bool
}

// Port is a port with its verdict.
type Port struct {
	PortInfo
	Verdict Severity `json:"verdict"`
	// Message is the worst covering condition's message, or the healthy
	// description.
	Message    string      `json:"message"`
	Conditions []Condition `json:"conditions"`
}

// Key is "<device>/<port>", as FatalPorts lists ports.
func (p *Port) Key() string { return fmt.Sprintf("%s/%d", p.Device, p.Port) }

// Snapshot is one published verdict. It is never modified after Build.
type Snapshot struct {
	Node       Node        `json:"node"`
	Verdict    Severity    `json:"verdict"`
	Ports      []Port      `json:"ports"`
	Conditions []Condition `json:"conditions"`
	// FatalPorts and DegradedPorts are "<device>/<port>" keys, sorted.
	FatalPorts    []string `json:"fatalPorts"`
	DegradedPorts []string `json:"degradedPorts"`
	NICs          int      `json:"nics"`
	// AER is what the AER check last counted on each PCI function of the
	// NICs' paths, shown as is (a count, not a verdict: the verdict is in
	// the conditions).
	AER []AERTotal `json:"aer,omitempty"`
	// Inventory is every NVIDIA/Mellanox NIC function on the PCI bus that
	// is not a VF, as identity (no verdict: a function's conditions are in
	// Conditions).
	Inventory []NICInfo `json:"inventory,omitempty"`
	// KernelLog is what the kernel-log check read and matched since the
	// daemon started (nil when it is off).
	KernelLog *KernelLogTotals `json:"kernelLog,omitempty"`
	// Modules are the RoCE ports' transceivers as the last pass read
	// them, and Devlink the NIC functions' health reporters and firmware
	// (readings, not verdicts: the verdict is in the conditions).
	Modules []ModuleReading  `json:"modules,omitempty"`
	Devlink []DevlinkReading `json:"devlink,omitempty"`
}

// Build judges every port by the conditions that cover it and the node by
// all of them. Ports come in the caller's order; conditions on ports the
// caller did not list still count for the node and name their port in
// FatalPorts/DegradedPorts.
func Build(node Node, ports []PortInfo, conds []Condition) *Snapshot {
	conds = latchedMessages(ports, conds)
	s := &Snapshot{Node: node, Ports: make([]Port, 0, len(ports)), Conditions: conds,
		FatalPorts: []string{}, DegradedPorts: []string{}}
	nics := map[string]bool{}
	listed := map[string]bool{}
	for _, pi := range ports {
		p := Port{PortInfo: pi, Message: pi.HealthyMessage, Conditions: []Condition{}}
		for i := range conds {
			c := &conds[i]
			if !c.Covers(pi.Device, pi.Port, pi.Card) {
				continue
			}
			p.Conditions = append(p.Conditions, *c)
			if c.Severity > p.Verdict {
				p.Verdict, p.Message = c.Severity, c.Message
			}
		}
		nics[pi.Device] = true
		listed[p.Key()] = true
		s.addPort(p.Key(), p.Verdict)
		s.Ports = append(s.Ports, p)
	}
	for i := range conds {
		c := &conds[i]
		s.Verdict = max(s.Verdict, c.Severity)
		if c.Entity.Kind == condition.Node || c.Entity.Kind == condition.Card || c.Entity.Kind == condition.PCI || c.Entity.Kind == condition.Check || c.Entity.Kind == condition.KernelLog || c.Entity.Port == 0 {
			continue
		}
		if k := fmt.Sprintf("%s/%d", c.Entity.Device, c.Entity.Port); !listed[k] {
			s.addPort(k, c.Severity)
		}
	}
	s.NICs = len(nics)
	return s
}

// latchedMessages gives each latched counter breach the counter's latched
// message in place of its event's: the event said the reading of the tick
// that breached ("rate=5000.00/sec"), which a view showing it minutes
// later would present as the rate now. conds is not modified.
func latchedMessages(ports []PortInfo, conds []Condition) []Condition {
	type key struct {
		device string
		port   int
		name   string
	}
	var latched map[key]string
	for i := range ports {
		for _, c := range ports[i].Counters {
			if c.Breached && c.Latched != "" {
				if latched == nil {
					latched = map[key]string{}
				}
				latched[key{ports[i].Device, ports[i].Port, c.Name}] = c.Latched
			}
		}
	}
	if latched == nil {
		return conds
	}
	var out []Condition // a copy, made at the first message it changes
	for i := range conds {
		c := &conds[i]
		if c.Kind != event.KindCounterBreach || c.Entity.Kind != condition.Counter {
			continue
		}
		if msg, ok := latched[key{c.Entity.Device, c.Entity.Port, c.Entity.Name}]; ok && msg != c.Message {
			if out == nil {
				out = make([]Condition, len(conds))
				copy(out, conds)
			}
			out[i].Message = msg
		}
	}
	if out == nil {
		return conds
	}
	return out
}

func (s *Snapshot) addPort(key string, v Severity) {
	var list *[]string
	switch v {
	case Fatal:
		list = &s.FatalPorts
	case NonFatal:
		list = &s.DegradedPorts
	default:
		return
	}
	if i, found := slices.BinarySearchFunc(*list, key, CompareDevices); !found {
		*list = slices.Insert(*list, i, key)
	}
	if v == Fatal {
		// A port is counted once, under its worst verdict.
		if i, found := slices.BinarySearchFunc(s.DegradedPorts, key, CompareDevices); found {
			s.DegradedPorts = slices.Delete(s.DegradedPorts, i, i+1)
		}
	}
}

// Healthy reports whether nothing is wrong anywhere on the node.
func (s *Snapshot) Healthy() bool { return s.Verdict == Healthy }

// FailedChecks lists the conditions of checks disabled by a panic
// (check-failed): the node's monitoring is incomplete while any remains.
func (s *Snapshot) FailedChecks() []Condition {
	var out []Condition
	for _, c := range s.Conditions {
		if c.Entity.Kind == condition.Check {
			out = append(out, c)
		}
	}
	return out
}

// Port returns the port device/port, or nil.
func (s *Snapshot) Port(device string, port int) *Port {
	for i := range s.Ports {
		if s.Ports[i].Device == device && s.Ports[i].Port == port {
			return &s.Ports[i]
		}
	}
	return nil
}

// Status is the one-line summary of STATUS= and `nichealthctl status`, e.g.
//
//	12 ports on 12 NICs monitored; all healthy
//	12 ports on 12 NICs monitored; 1 fatal: mlx5_3 port 1: state DOWN, phys_state Disabled
//	12 ports on 12 NICs monitored; 1 degraded: mlx5_5 port 1: symbol_error latched
func (s *Snapshot) Status() string {
	head := fmt.Sprintf("%d %s on %d %s monitored", len(s.Ports), plural(len(s.Ports), "port", "ports"), s.NICs, plural(s.NICs, "NIC", "NICs"))
	// A condition on no port (a NIC function without an RDMA device, the
	// node's compute ports) counts as one more fatal or degraded thing.
	nf, nd := len(s.FatalPorts)+s.offPort(Fatal), len(s.DegradedPorts)+s.offPort(NonFatal)
	if s.Verdict == Healthy {
		return head + "; all healthy"
	}
	out := head
	if nf > 0 || s.Verdict == Fatal {
		out += fmt.Sprintf("; %d fatal", nf)
	}
	if nd > 0 || s.Verdict == NonFatal {
		// A node-level condition degrades the node with no port degraded.
		out += fmt.Sprintf("; %d degraded", nd)
	}
	if w := s.worst(); w != nil {
		out += ": " + oneLine(w.Message)
		if extra := len(s.Conditions) - 1; extra > 0 {
			out += fmt.Sprintf(" (and %d more %s)", extra, plural(extra, "condition", "conditions"))
		}
	}
	return out
}

// offPort counts the conditions of severity sev that cover no port.
func (s *Snapshot) offPort(sev Severity) int {
	n := 0
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Severity == sev && len(c.Ports) == 0 && (c.Entity.Kind == condition.Node || c.Entity.Kind == condition.PCI) {
			n++
		}
	}
	return n
}

func (s *Snapshot) worst() *Condition {
	if len(s.Conditions) == 0 {
		return nil
	}
	return &s.Conditions[0] // sorted worst first by Model.Conditions
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneLine(s string) string {
	const maxLen = 160
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		out = append(out, r)
		if len(out) >= maxLen {
			out = append(out, '…')
			break
		}
	}
	return string(out)
}
