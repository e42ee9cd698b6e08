package ibnet

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a node is, as ibnetdiscover names it.
type Kind uint8

const (
	Switch Kind = iota + 1
	HCA
	Router
)

func (k Kind) String() string {
	switch k {
	case Switch:
		return "switch"
	case HCA:
		return "hca"
	case Router:
		return "router"
	}
	return "unknown"
}

// MarshalText makes a Kind read as its name in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// GUID is a 64-bit InfiniBand GUID (node, port or system image).
type GUID uint64

// String prints a GUID as ibstat and node-name maps do: 0x and 16 hex
// digits, so the same GUID always reads the same whichever tool printed it.
func (g GUID) String() string { return fmt.Sprintf("0x%016x", uint64(g)) }

// MarshalText makes a GUID read as its String in JSON.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// ParseGUID reads a GUID in any of the forms the tools print: with or
// without 0x, with or without leading zeros, or sysfs's colon-separated
// groups (b83f:d203:00a0:b010).
func ParseGUID(s string) (GUID, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if strings.Count(t, ":") == 3 {
		t = strings.ReplaceAll(t, ":", "")
	}
	if t == "" || len(t) > 16 {
		return 0, fmt.Errorf("GUID %q: want up to 16 hex digits", s)
	}
	v, err := strconv.ParseUint(t, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("GUID %q: %w", s, err)
	}
	return GUID(v), nil
}

// Format says which of ibnetdiscover's outputs a graph was read from.
type Format uint8

const (
	// Topology is the default output (the topology file format, plain or
	// grouped with -g), and ibdiagnet's .ibnetdiscover file.
	Topology Format = iota + 1
	// PortsReport is `ibnetdiscover -p`: one line per port. It prints no
	// node GUIDs: a switch is known by its ports' shared GUID (its node
	// GUID on the switches of every vendor that prints one), an HCA or
	// router by the GUIDs of its ports.
	PortsReport
)

func (f Format) String() string {
	switch f {
	case Topology:
		return "topology"
	case PortsReport:
		return "ports report (-p)"
	}
	return "none"
}

// Node is one switch, HCA or router of the fabric.
type Node struct {
	Kind Kind
	GUID GUID
	// SysImageGUID is shared by the switch ASICs of one chassis (a
	// director's line and spine boards), so it is what a chassis is.
	SysImageGUID GUID
	VendorID     uint32
	DeviceID     uint32
	NumPorts     int
	// Desc is the NodeDescription as the dump printed it (already mapped
	// when ibnetdiscover ran with --node-name-map); Name is what the views
	// show: the node-name map's name when one is applied, else Desc.
	Desc string
	Name string
	// LID is a switch's port 0 LID, or the LID of an HCA's or router's
	// lowest-numbered port that has one (0 = not known).
	LID int
	// Chassis is the "# Chassis N" number of a grouped dump (-g), 0 if none.
	Chassis int
	// Described: the dump has this node's own block (a node only named as
	// the far end of a link is not described).
	Described bool
	// ports are the node's connected ports: Graph.Ports[first:first+count].
	first, count int32
}

// Width is a link's active width, as ibnetdiscover prints it.
type Width uint8

const (
	WidthUnknown Width = iota // "??": the SMA did not say
	Width1x
	Width2x
	Width4x
	Width8x
	Width12x
)

var widthNames = [...]string{"??", "1x", "2x", "4x", "8x", "12x"}
var widthLanes = [...]float64{0, 1, 2, 4, 8, 12}

func (w Width) String() string {
	if int(w) < len(widthNames) {
		return widthNames[w]
	}
	return widthNames[WidthUnknown]
}

// MarshalText writes the width as printed ("4x").
func (w Width) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

func parseWidth(s string) (Width, bool) {
	for i, n := range widthNames {
		if strings.EqualFold(s, n) {
			return Width(i), true
		}
	}
	return WidthUnknown, false
}

// Speed is a link's active speed, as ibnetdiscover prints it.
type Speed uint8

const (
	SpeedUnknown Speed = iota // "???"
	SDR
	DDR
	QDR
	FDR10
	FDR
	EDR
	HDR
	NDR
	XDR
)

var speedNames = [...]string{"???", "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}

// laneGbps is the data rate of one lane at each speed (IBTA: SDR 2.5,
// DDR 5, QDR 10 Gb/s signalling with 8b/10b; FDR and up 64b/66b or PAM4).
var laneGbps = [...]float64{0, 2, 4, 8, 10, 13.64, 25, 50, 100, 200}

func (s Speed) String() string {
	if int(s) < len(speedNames) {
		return speedNames[s]
	}
	return speedNames[SpeedUnknown]
}

// MarshalText writes the speed as printed ("NDR").
func (s Speed) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func parseSpeed(s string) (Speed, bool) {
	for i, n := range speedNames {
		if strings.EqualFold(s, n) {
			return Speed(i), true
		}
	}
	return SpeedUnknown, false
}

// Rate is the data rate of a link of that width and speed in Gb/s (0 when
// either is unknown).
func Rate(w Width, s Speed) float64 {
	if int(w) >= len(widthLanes) || int(s) >= len(laneGbps) {
		return 0
	}
	return widthLanes[w] * laneGbps[s]
}

// Port is one connected port of a node, as its node's block (or line)
// described it.
type Port struct {
	// Node is the index in Graph.Nodes of the node the port belongs to.
	Node int32
	Num  uint8
	LMC  uint8
	// Width and Speed are the link's as this end printed them.
	Width Width
	Speed Speed
	LID   int32 // an HCA's or router's port LID (a switch's ports share its LID)
	GUID  GUID  // an HCA's or router's port GUID (a switch's ports share port 0's)
	// Label is the port's label when the dump printed one: Quantum-2 (NDR)
	// switches name their split ports cage/port/split ("1/1/1").
	Label  string
	Remote End
}

// End names one end of a link.
type End struct {
	Node     int32 // index in Graph.Nodes
	Port     uint8
	PortGUID GUID // an HCA's or router's port GUID, 0 for a switch or unknown
}

// Link is one physical link, counted once whichever end (or both) the dump
// described it from.
type Link struct {
	A, B End
	// Width and Speed are the link's as trained. When the two ends printed
	// different values the slower one is kept and Disagree says so.
	Width    Width
	Speed    Speed
	Disagree bool
	// Degraded: the link trained below the links it should match (the
	// other links of its class on the same switches); ExpectedWidth and
	// ExpectedSpeed say what they run at.
	Degraded      bool
	ExpectedWidth Width
	ExpectedSpeed Speed
}

// Gbps is the link's data rate (0 when its width or speed is unknown).
func (l *Link) Gbps() float64 { return Rate(l.Width, l.Speed) }

// Rate is the link's width and speed as printed ("4xNDR").
func (l *Link) Rate() string { return l.Width.String() + l.Speed.String() }

// Expected is the width and speed its peers run at ("" unless Degraded).
func (l *Link) Expected() string {
	if !l.Degraded {
		return ""
	}
	return l.ExpectedWidth.String() + l.ExpectedSpeed.String()
}

// Problem is a line the parser skipped, and why.
type Problem struct {
	Line   int    `json:"line"` // 0: the file as a whole
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Reason
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Reason)
}

// maxProblems bounds the problems a graph keeps: a file of garbage is
// said by its first lines and a count, not by a list as long as itself.
const maxProblems = 1000

// Graph is a parsed fabric. Nodes, ports and links are values in flat
// slices that refer to each other by index, so a fabric of a hundred
// thousand nodes costs a few tens of bytes per port and link.
type Graph struct {
	Nodes []Node
	// Ports are every node's connected ports, node by node in port order.
	Ports []Port
	// Links are sorted by their A end's node GUID and port.
	Links    []Link
	Problems []Problem
	// MoreProblems counts the skipped lines past the first maxProblems.
	MoreProblems int
	Format       Format
	byGUID       map[GUID]int32
}

// Index returns the index of the node with that GUID (a node GUID, or in
// a ports report any of a node's port GUIDs), or -1.
func (g *Graph) Index(guid GUID) int {
	if i, ok := g.byGUID[guid]; ok {
		return int(i)
	}
	return -1
}

// Node returns the node with that GUID, or nil.
func (g *Graph) Node(guid GUID) *Node {
	if i := g.Index(guid); i >= 0 {
		return &g.Nodes[i]
	}
	return nil
}

// PortsOf returns node i's connected ports, in port order.
func (g *Graph) PortsOf(i int) []Port {
	n := &g.Nodes[i]
	return g.Ports[n.first : n.first+n.count]
}

// PortOf returns node i's port num, or nil when it has no such connected
// port.
func (g *Graph) PortOf(i int, num int) *Port {
	ps := g.PortsOf(i)
	lo, hi := 0, len(ps)
	for lo < hi {
		m := (lo + hi) / 2
		if int(ps[m].Num) < num {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ps) && int(ps[lo].Num) == num {
		return &ps[lo]
	}
	return nil
}

// End returns the node a link end is on.
func (g *Graph) End(e End) *Node { return &g.Nodes[e.Node] }

// Count returns how many nodes of a kind the graph has.
func (g *Graph) Count(k Kind) int {
	n := 0
	for i := range g.Nodes {
		if g.Nodes[i].Kind == k {
			n++
		}
	}
	return n
}
