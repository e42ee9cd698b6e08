package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Version is the protocol's version, which hello answers carry.
const Version = 1

// MaxLine bounds a line either way, newline included: the largest answer
// (ports, MaxPorts entries) is a few KiB.
const MaxLine = 16 << 10

// Bounds of what an answer may carry.
const (
	// MaxPorts bounds a ports answer: 32 CAs (libibumad's UMAD_MAX_DEVICES)
	// of two ports each, with room.
	MaxPorts = 128
	// MaxText bounds a NodeDescription (64 bytes on the wire; escaped
	// bytes may take four each), a CA name, an error message.
	MaxText = 256
	// MaxTimeout bounds a request's budget.
	MaxTimeout = 60_000
)

// Operations. Each reads; none sends a Set.
const (
	// OpHello: the helper's version; answering it proves the libraries loaded.
	OpHello = "hello"
	// OpPorts: every local CA port libibumad sees (name, number, GUID,
	// LID, state, link layer), to match sysfs ports by port GUID.
	OpPorts = "ports"
	// OpPeer: the node at the other end of a local port, by directed-route
	// SMPs (NodeInfo, NodeDescription, PortInfo): the fabric's simulator
	// and some SMs do not answer multi-packet SA queries, and a
	// directed route needs no SA at all.
	OpPeer = "peer"
	// OpPeerNode: only the neighbour's NodeInfo (one SMP): whether the
	// peer found earlier is still at the other end of the cable. The
	// answer is a Peer without LID, description or port state.
	OpPeerNode = "peernode"
	// OpClassPortInfo: the PMA's ClassPortInfo at a LID (which counter
	// sets it offers).
	OpClassPortInfo = "classportinfo"
	// OpPortCounters: PMA PortCounters of a port at a LID.
	OpPortCounters = "portcounters"
	// OpPortCountersExt: PMA PortCountersExtended of a port at a LID.
	OpPortCountersExt = "portcountersext"
	// OpNodeInfo: a LID-routed SMP NodeInfo to a LID: which node answers
	// there now. A LID taken from a fabric dump may have been given to
	// another node by the subnet manager since; a PMA Get to it would
	// read that node's counters as if they were the planned switch's.
	OpNodeInfo = "nodeinfo"
)

var ops = []string{OpHello, OpPorts, OpPeer, OpPeerNode, OpClassPortInfo, OpPortCounters, OpPortCountersExt, OpNodeInfo}

// Local selects a local port: by CA name and port number, or by port GUID.
type Local struct {
	CA   string `json:"ca,omitempty"`
	Port int    `json:"port,omitempty"`
	GUID string `json:"guid,omitempty"`
}

// Request is one line to the helper.
type Request struct {
	ID        uint64 `json:"id"`
	Op        string `json:"op"`
	TimeoutMS int    `json:"timeoutMs,omitempty"`
	Local     *Local `json:"local,omitempty"`
	// LID and PortNum address a PMA: the peer's LID (a switch's is its
	// port 0's) and the port whose counters to read. A nodeinfo request
	// names only the LID.
	LID     int `json:"lid,omitempty"`
	PortNum int `json:"portNum,omitempty"`
	// ExtErrors asks portcountersext for the 64-bit error counters too
	// (only when ClassPortInfo offers them: Cap2AddlPortCountersX).
	ExtErrors bool `json:"extErrors,omitempty"`
}

// Error kinds an answer can carry.
const (
	// ErrTimeout: a MAD got no answer within the budget.
	ErrTimeout = "timeout"
	// ErrNoPort: no local port matches the selector (or libibumad sees none).
	ErrNoPort = "no-port"
	// ErrOpen: the local port could not be opened (permissions on
	// /dev/infiniband/umad*, no ib_umad module).
	ErrOpen = "open"
	// ErrMAD: the MAD was answered with an error status, or failed.
	ErrMAD = "mad"
	// ErrRequest: the request itself was malformed.
	ErrRequest = "request"
)

var errKinds = []string{ErrTimeout, ErrNoPort, ErrOpen, ErrMAD, ErrRequest}

// Error is a failed operation.
type Error struct {
	Kind string `json:"kind"`
	Msg  string `json:"msg"`
}

func (e *Error) Error() string { return e.Kind + ": " + e.Msg }

// Hello is the helper's greeting.
type Hello struct {
	Version int    `json:"version"`
	Helper  string `json:"helper"`
}

// LocalPort is a port libibumad sees on this host.
type LocalPort struct {
	CA        string `json:"ca"`
	Port      int    `json:"port"`
	GUID      string `json:"guid"`
	LID       int    `json:"lid"`
	SMLID     int    `json:"smLid"`
	State     int    `json:"state"`     // PortInfo PortState: 1 Down .. 4 Active
	PhysState int    `json:"physState"` // PortInfo PortPhysicalState: 5 LinkUp
	LinkLayer string `json:"linkLayer"`
}

// Peer is the node at the other end of a local port, as it describes
// itself to a directed-route SMP.
type Peer struct {
	NodeGUID string `json:"nodeGuid"`
	PortGUID string `json:"portGuid"`
	// NodeType: 1 CA, 2 switch, 3 router.
	NodeType int `json:"nodeType"`
	NumPorts int `json:"numPorts"`
	// Port is the peer's port the cable plugs into (NodeInfo LocalPortNum).
	Port int `json:"port"`
	// LID addresses the peer's PMA: a switch's port 0 LID, a CA port's own.
	LID         int    `json:"lid"`
	Description string `json:"description"`
	// State and PhysState of the peer's port.
	State     int `json:"state"`
	PhysState int `json:"physState"`
}

// Node is the node that answers at a LID, as its NodeInfo says.
type Node struct {
	NodeGUID string `json:"nodeGuid"`
	// NodeType: 1 CA, 2 switch, 3 router.
	NodeType int `json:"nodeType"`
	NumPorts int `json:"numPorts"`
}

// ClassPortInfo is what a PMA says it offers.
type ClassPortInfo struct {
	CapMask  uint32 `json:"capMask"`
	CapMask2 uint32 `json:"capMask2"`
}

// PMA ClassPortInfo capability bits (IBTA vol. 1, PerformanceManagement
// ClassPortInfo:CapabilityMask and CapabilityMask2).
const (
	CapAllPortSelect      = 1 << 8
	CapExtWidth           = 1 << 9  // PortCountersExtended, all fields
	CapExtWidthNoIETF     = 1 << 10 // PortCountersExtended, data fields only
	CapXmitWait           = 1 << 12 // PortCounters:PortXmitWait
	Cap2AddlPortCountersX = 1 << 1  // PortCountersExtended carries the error counters, 64-bit
)

// Extended reports whether the PMA offers PortCountersExtended.
func (c ClassPortInfo) Extended() bool { return c.CapMask&(CapExtWidth|CapExtWidthNoIETF) != 0 }

// ExtendedErrors reports whether PortCountersExtended carries the error
// counters (64-bit: they never saturate).
func (c ClassPortInfo) ExtendedErrors() bool { return c.CapMask2&Cap2AddlPortCountersX != 0 }

// PortCounters is PMA PortCounters, each field as wide as on the wire
// (Fields gives the widths).
type PortCounters struct {
	SymbolErrorCounter           uint64 `json:"SymbolErrorCounter"`
	LinkErrorRecoveryCounter     uint64 `json:"LinkErrorRecoveryCounter"`
	LinkDownedCounter            uint64 `json:"LinkDownedCounter"`
	PortRcvErrors                uint64 `json:"PortRcvErrors"`
	PortRcvRemotePhysicalErrors  uint64 `json:"PortRcvRemotePhysicalErrors"`
	PortRcvSwitchRelayErrors     uint64 `json:"PortRcvSwitchRelayErrors"`
	PortXmitDiscards             uint64 `json:"PortXmitDiscards"`
	PortXmitConstraintErrors     uint64 `json:"PortXmitConstraintErrors"`
	PortRcvConstraintErrors      uint64 `json:"PortRcvConstraintErrors"`
	LocalLinkIntegrityErrors     uint64 `json:"LocalLinkIntegrityErrors"`
	ExcessiveBufferOverrunErrors uint64 `json:"ExcessiveBufferOverrunErrors"`
	VL15Dropped                  uint64 `json:"VL15Dropped"`
	PortXmitData                 uint64 `json:"PortXmitData"`
	PortRcvData                  uint64 `json:"PortRcvData"`
	PortXmitPkts                 uint64 `json:"PortXmitPkts"`
	PortRcvPkts                  uint64 `json:"PortRcvPkts"`
	PortXmitWait                 uint64 `json:"PortXmitWait"`
}

// PortCountersExt is PMA PortCountersExtended: 64-bit data counters, and
// the error counters when the PMA offers them (Errors).
type PortCountersExt struct {
	PortXmitData uint64 `json:"PortXmitData"`
	PortRcvData  uint64 `json:"PortRcvData"`
	PortXmitPkts uint64 `json:"PortXmitPkts"`
	PortRcvPkts  uint64 `json:"PortRcvPkts"`
	// Errors holds the 64-bit error counters (ClassPortInfo CapabilityMask2
	// IsAdditionalPortCountersExtendedSupported); nil when not offered.
	Errors *PortCounters `json:"errors,omitempty"`
}

// Answer is one line from the helper: exactly one of its payloads, or Err.
type Answer struct {
	ID       uint64           `json:"id"`
	Err      *Error           `json:"error,omitempty"`
	Hello    *Hello           `json:"hello,omitempty"`
	Ports    []LocalPort      `json:"ports,omitempty"`
	Peer     *Peer            `json:"peer,omitempty"`
	Node     *Node            `json:"node,omitempty"`
	CPI      *ClassPortInfo   `json:"classPortInfo,omitempty"`
	Counters *PortCounters    `json:"counters,omitempty"`
	Ext      *PortCountersExt `json:"ext,omitempty"`
	// NoPorts marks a ports answer that found none (an empty list is
	// otherwise indistinguishable from a missing payload).
	NoPorts bool `json:"noPorts,omitempty"`
}

// Field is one PortCounters field: its name on the wire (as perfquery
// prints it) and its width in bits. A field at its maximum has saturated.
type Field struct {
	Name string
	Bits uint
}

// Max is the field's largest value.
func (f Field) Max() uint64 {
	if f.Bits >= 64 {
		return ^uint64(0)
	}
	return 1<<f.Bits - 1
}

// NumFields is the number of PortCounters fields (len(Fields)): the length
// of every array that holds one value per field (Values, the far end's and
// the fabric share's counters, the helper's libibmad field tables).
const NumFields = 17

// Fields are PortCounters' fields in wire order with their widths (IBTA
// vol. 1, PortCounters).
var Fields = []Field{
	{"SymbolErrorCounter", 16},
	{"LinkErrorRecoveryCounter", 8},
	{"LinkDownedCounter", 8},
	{"PortRcvErrors", 16},
	{"PortRcvRemotePhysicalErrors", 16},
	{"PortRcvSwitchRelayErrors", 16},
	{"PortXmitDiscards", 16},
	{"PortXmitConstraintErrors", 8},
	{"PortRcvConstraintErrors", 8},
	{"LocalLinkIntegrityErrors", 4},
	{"ExcessiveBufferOverrunErrors", 4},
	{"VL15Dropped", 16},
	{"PortXmitData", 32},
	{"PortRcvData", 32},
	{"PortXmitPkts", 32},
	{"PortRcvPkts", 32},
	{"PortXmitWait", 32},
}

// FieldIndex is the position in Fields of the field called name, or -1
// when PortCounters has no such field.
func FieldIndex(name string) int {
	return slices.IndexFunc(Fields, func(f Field) bool { return f.Name == name })
}

// Values lists c's fields in the order of Fields.
func (c *PortCounters) Values() [NumFields]uint64 {
	return [NumFields]uint64{
		c.SymbolErrorCounter, c.LinkErrorRecoveryCounter, c.LinkDownedCounter,
		c.PortRcvErrors, c.PortRcvRemotePhysicalErrors, c.PortRcvSwitchRelayErrors,
		c.PortXmitDiscards, c.PortXmitConstraintErrors, c.PortRcvConstraintErrors,
		c.LocalLinkIntegrityErrors, c.ExcessiveBufferOverrunErrors, c.VL15Dropped,
		c.PortXmitData, c.PortRcvData, c.PortXmitPkts, c.PortRcvPkts, c.PortXmitWait,
	}
}

// Encode is v as one line (newline included), or an error when it would
// exceed MaxLine.
func Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxLine {
		return nil, fmt.Errorf("line of %d bytes exceeds the protocol's %d", len(b)+1, MaxLine)
	}
	return append(b, '\n'), nil
}

// ErrTooLong is a line over MaxLine.
var ErrTooLong = errors.New("line exceeds the protocol's bound")

func unmarshal(line []byte, v any) error {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line)+1 > MaxLine {
		return ErrTooLong
	}
	if !utf8.Valid(line) {
		return errors.New("line is not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// DecodeRequest parses and validates one request line (the helper's side).
func DecodeRequest(line []byte) (Request, error) {
	var r Request
	if err := unmarshal(line, &r); err != nil {
		return Request{}, fmt.Errorf("request: %w", err)
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// DecodeAnswer parses and validates one answer line (the daemon's side).
func DecodeAnswer(line []byte) (Answer, error) {
	var a Answer
	if err := unmarshal(line, &a); err != nil {
		return Answer{}, fmt.Errorf("answer: %w", err)
	}
	if err := a.validate(); err != nil {
		return Answer{}, fmt.Errorf("answer %d: %w", a.ID, err)
	}
	if a.Peer != nil {
		// A node names itself: what an older or broken helper let through
		// is escaped here, before any view, event or Nagios line sees it.
		a.Peer.Description = EscapeText(a.Peer.Description)
	}
	return a, nil
}

// validate checks each field fits its width.
func (c *PortCounters) validate() error {
	v := c.Values()
	for i, f := range Fields {
		if v[i] > f.Max() {
			return fmt.Errorf("%s %d exceeds its %d-bit field", f.Name, v[i], f.Bits)
		}
	}
	return nil
}

// ValidGUID reports whether s is a GUID as the protocol writes it: 0x and
// 16 lower-case hex digits.
func ValidGUID(s string) bool {
	if len(s) != 18 || !strings.HasPrefix(s, "0x") {
		return false
	}
	for _, r := range s[2:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// FormatGUID writes g as the protocol does.
func FormatGUID(g uint64) string {
	s := strconv.FormatUint(g, 16)
	return "0x" + strings.Repeat("0", 16-len(s)) + s
}

// ParseGUID reads a GUID written by FormatGUID.
func ParseGUID(s string) (uint64, error) {
	if !ValidGUID(s) {
		return 0, fmt.Errorf("GUID %q is not 0x and 16 hex digits", clip(s))
	}
	return strconv.ParseUint(s[2:], 16, 64)
}
