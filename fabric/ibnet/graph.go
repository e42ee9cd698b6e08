package ibnet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/internal/nodenamemap"
)

// Kind is what a node is, as ibnetdiscover names it.
type Kind int

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
	g, err := nodenamemap.ParseGUID(s)
	return GUID(g), err
}

// Node is one switch, HCA or router of the fabric.
type Node struct {
	Kind Kind `json:"kind"`
	GUID GUID `json:"guid"`
	// SysImageGUID is shared by the switch ASICs of one chassis (a
	// director's line and spine boards), so it is what a chassis is.
	SysImageGUID GUID   `json:"sysImageGUID,omitempty"`
	VendorID     uint32 `json:"vendorID,omitempty"`
	DeviceID     uint32 `json:"deviceID,omitempty"`
	NumPorts     int    `json:"numPorts"`
	// Desc is the NodeDescription as the dump printed it (already mapped
	// when ibnetdiscover ran with --node-name-map); Name is what the view
	// shows: the node-name map's name when one is applied, else Desc.
	Desc string `json:"desc"`
	Name string `json:"name"`
	// LID is a switch's port 0 LID, or the LID of an HCA's or router's
	// first port that has one (0 = not known).
	LID int `json:"lid,omitempty"`
	// Chassis is the "# Chassis N" number of a grouped dump (-g), 0 if none.
	Chassis int `json:"chassis,omitempty"`
	// Described: the dump has this node's own block (a node only named as
	// the far end of a link is not described).
	Described bool    `json:"described"`
	Ports     []*Port `json:"ports"`
}

// Port is one connected port of a node.
type Port struct {
	Num  int  `json:"num"`
	GUID GUID `json:"guid,omitempty"` // port GUID (an HCA's or router's; a switch's ports share port 0's)
	LID  int  `json:"lid,omitempty"`
	LMC  int  `json:"lmc,omitempty"`
	// Width and Speed are the active link width and speed as printed
	// ("4x", "NDR"; "??"/"???" when the SMA did not say).
	Width string `json:"width"`
	Speed string `json:"speed"`
	// Remote is the far end.
	Remote End `json:"remote"`
}

// End names one end of a link.
type End struct {
	GUID     GUID   `json:"guid"`
	Port     int    `json:"port"`
	PortGUID GUID   `json:"portGUID,omitempty"`
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"`
}

// Link is one physical link, counted once whichever end (or both) the dump
// described it from.
type Link struct {
	A End `json:"a"`
	B End `json:"b"`
	// Width and Speed are the link's as trained. When the two ends printed
	// different values the slower one is kept and Disagree says so.
	Width    string `json:"width"`
	Speed    string `json:"speed"`
	Disagree bool   `json:"disagree,omitempty"`
	// Gbps is Width × Speed's per-lane data rate (0 when either is unknown).
	Gbps float64 `json:"gbps"`
	// Degraded: the link trained below the links it should match (the
	// other links of its class on the same switches); Expected says what
	// they run at.
	Degraded bool   `json:"degraded,omitempty"`
	Expected string `json:"expected,omitempty"`
}

// Problem is a line the parser skipped, and why.
type Problem struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Reason) }

// Graph is a parsed fabric.
type Graph struct {
	Nodes    []*Node   `json:"nodes"`
	Links    []*Link   `json:"links"`
	Problems []Problem `json:"problems,omitempty"`
	byGUID   map[GUID]*Node
}

// Node returns the node with that node GUID, or nil.
func (g *Graph) Node(guid GUID) *Node { return g.byGUID[guid] }

// Count returns how many nodes of a kind the graph has.
func (g *Graph) Count(k Kind) int {
	n := 0
	for _, nd := range g.Nodes {
		if nd.Kind == k {
			n++
		}
	}
	return n
}

// laneGbps is the data rate of one lane at each speed ibnetdiscover
// prints (IBTA: SDR 2.5, DDR 5, QDR 10 Gb/s signalling with 8b/10b; FDR
// and up 64b/66b or PAM4).
var laneGbps = map[string]float64{
	"SDR": 2, "DDR": 4, "QDR": 8, "FDR10": 10, "FDR": 13.64, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200,
}

// Rate is the data rate of a link of that width and speed in Gb/s (0 when
// either is unknown).
func Rate(width, speed string) float64 {
	lanes, err := strconv.Atoi(strings.TrimSuffix(strings.ToLower(width), "x"))
	if err != nil || lanes <= 0 {
		return 0
	}
	return float64(lanes) * laneGbps[strings.ToUpper(speed)]
}
