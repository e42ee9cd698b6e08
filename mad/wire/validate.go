package wire

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Validate checks a request's fields for its operation.
func (r *Request) Validate() error {
	if !slices.Contains(ops, r.Op) {
		return fmt.Errorf("request: unknown operation %q", clip(r.Op))
	}
	if r.TimeoutMS < 0 || r.TimeoutMS > MaxTimeout {
		return fmt.Errorf("request: timeoutMs %d outside 0..%d", r.TimeoutMS, MaxTimeout)
	}
	needLocal := r.Op != OpHello && r.Op != OpPorts
	if !needLocal {
		return nil
	}
	if r.Local == nil {
		return fmt.Errorf("request: %s needs a local port", r.Op)
	}
	if err := r.Local.validate(); err != nil {
		return err
	}
	if r.Op == OpPeer || r.Op == OpPeerNode {
		return nil
	}
	if r.LID < 1 || r.LID > 0xBFFF {
		return fmt.Errorf("request: LID %d is not a unicast LID (1..0xBFFF)", r.LID)
	}
	if r.Op != OpClassPortInfo && r.Op != OpNodeInfo && (r.PortNum < 0 || r.PortNum > 254) {
		return fmt.Errorf("request: port %d outside 0..254", r.PortNum)
	}
	return nil
}

func (l *Local) validate() error {
	switch {
	case l.GUID != "" && (l.CA != "" || l.Port != 0):
		return errors.New("request: a local port is a CA and port or a GUID, not both")
	case l.GUID != "":
		if !ValidGUID(l.GUID) {
			return fmt.Errorf("request: GUID %q is not 0x and 16 hex digits", clip(l.GUID))
		}
	case l.CA == "" || len(l.CA) > 64 || !printable(l.CA):
		return fmt.Errorf("request: CA name %q is empty, too long or not printable", clip(l.CA))
	case l.Port < 1 || l.Port > 254:
		return fmt.Errorf("request: local port %d outside 1..254", l.Port)
	}
	return nil
}

func (a *Answer) payloads() int {
	n := 0
	for _, set := range []bool{a.Err != nil, a.Hello != nil, len(a.Ports) > 0 || a.NoPorts, a.Peer != nil, a.Node != nil, a.CPI != nil, a.Counters != nil, a.Ext != nil} {
		if set {
			n++
		}
	}
	return n
}

func (a *Answer) validate() error {
	if n := a.payloads(); n != 1 {
		return fmt.Errorf("carries %d payloads, want exactly one", n)
	}
	switch {
	case a.Err != nil:
		if !slices.Contains(errKinds, a.Err.Kind) {
			return fmt.Errorf("unknown error kind %q", clip(a.Err.Kind))
		}
		if len(a.Err.Msg) > MaxText {
			return fmt.Errorf("error message of %d bytes exceeds %d", len(a.Err.Msg), MaxText)
		}
	case a.Hello != nil:
		if a.Hello.Version < 1 || len(a.Hello.Helper) > MaxText {
			return fmt.Errorf("hello version %d or name out of bounds", a.Hello.Version)
		}
	case a.NoPorts && len(a.Ports) > 0:
		return errors.New("says no ports and lists some")
	case len(a.Ports) > 0:
		if len(a.Ports) > MaxPorts {
			return fmt.Errorf("%d ports exceed %d", len(a.Ports), MaxPorts)
		}
		for i := range a.Ports {
			if err := a.Ports[i].validate(); err != nil {
				return fmt.Errorf("port %d: %w", i, err)
			}
		}
	case a.Peer != nil:
		return a.Peer.validate()
	case a.Node != nil:
		return a.Node.validate()
	case a.Counters != nil:
		return a.Counters.validate()
	case a.Ext != nil:
		// Every extended field is 64-bit: any value fits.
	}
	return nil
}

func (p *LocalPort) validate() error {
	switch {
	case p.CA == "" || len(p.CA) > 64 || !printable(p.CA):
		return fmt.Errorf("CA name %q is empty, too long or not printable", clip(p.CA))
	case p.Port < 0 || p.Port > 254:
		return fmt.Errorf("port %d outside 0..254", p.Port)
	case !ValidGUID(p.GUID):
		return fmt.Errorf("GUID %q is not 0x and 16 hex digits", clip(p.GUID))
	case p.LID < 0 || p.LID > 0xFFFF || p.SMLID < 0 || p.SMLID > 0xFFFF:
		return fmt.Errorf("LID %d or SM LID %d outside 0..0xFFFF", p.LID, p.SMLID)
	case p.State < 0 || p.State > 15 || p.PhysState < 0 || p.PhysState > 15:
		return fmt.Errorf("state %d or physical state %d outside 0..15", p.State, p.PhysState)
	case len(p.LinkLayer) > 32 || !printable(p.LinkLayer):
		return fmt.Errorf("link layer %q too long or not printable", clip(p.LinkLayer))
	}
	return nil
}

func (p *Peer) validate() error {
	switch {
	case !ValidGUID(p.NodeGUID) || !ValidGUID(p.PortGUID):
		return fmt.Errorf("peer GUIDs %q/%q are not 0x and 16 hex digits", clip(p.NodeGUID), clip(p.PortGUID))
	case p.NodeType < 1 || p.NodeType > 3:
		return fmt.Errorf("peer node type %d is not CA, switch or router", p.NodeType)
	case p.NumPorts < 1 || p.NumPorts > 255:
		return fmt.Errorf("peer has %d ports", p.NumPorts)
	case p.Port < 1 || p.Port > p.NumPorts:
		return fmt.Errorf("peer port %d outside 1..%d", p.Port, p.NumPorts)
	case p.LID < 0 || p.LID > 0xFFFF:
		return fmt.Errorf("peer LID %d outside 0..0xFFFF", p.LID)
	case len(p.Description) > MaxText || !utf8.ValidString(p.Description):
		return fmt.Errorf("peer description of %d bytes exceeds %d", len(p.Description), MaxText)
	case p.State < 0 || p.State > 15 || p.PhysState < 0 || p.PhysState > 15:
		return fmt.Errorf("peer state %d or physical state %d outside 0..15", p.State, p.PhysState)
	}
	return nil
}

func (n *Node) validate() error {
	switch {
	case !ValidGUID(n.NodeGUID):
		return fmt.Errorf("node GUID %q is not 0x and 16 hex digits", clip(n.NodeGUID))
	case n.NodeType < 1 || n.NodeType > 3:
		return fmt.Errorf("node type %d is not CA, switch or router", n.NodeType)
	case n.NumPorts < 1 || n.NumPorts > 255:
		return fmt.Errorf("node has %d ports", n.NumPorts)
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// clip bounds a value quoted in an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
