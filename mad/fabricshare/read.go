package fabricshare

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/mad/readcore"
	"github.com/nichealth/nichealthd/mad/wire"
)

// errNoSource: no local ACTIVE InfiniBand port to send MADs from.
var errNoSource = errors.New("no ACTIVE InfiniBand port on this host to send MADs from")

// source finds (once, and again after a failure) the local port the MADs
// leave by: the first ACTIVE InfiniBand port with a LID.
func (r *ShareReader) source(ctx context.Context, cfg ShareConfig) (wire.Local, error) {
	if r.src.GUID != "" {
		return r.src, nil
	}
	ps, err := r.c.Ports(ctx, cfg.Timeout)
	if err != nil {
		return wire.Local{}, fmt.Errorf("list the local ports: %w", err)
	}
	for _, p := range ps {
		// libibumad says "InfiniBand" (or "IB", or nothing on kernels
		// older than the link_layer file); only RoCE's "Ethernet" sends
		// no SMP.
		if p.State == 4 && p.LID > 0 && p.LinkLayer != "Ethernet" {
			r.src = wire.Local{GUID: p.GUID}
			return r.src, nil
		}
	}
	seen := make([]string, 0, 4)
	for _, p := range ps[:min(len(ps), 4)] {
		seen = append(seen, fmt.Sprintf("%s/%d state %d LID %d %s", p.CA, p.Port, p.State, p.LID, p.LinkLayer))
	}
	return wire.Local{}, fmt.Errorf("%w (seen: %s)", errNoSource, strings.Join(seen, "; "))
}

// readPort reads one assigned port: its switch's LID checked first (once
// per round), its PMA's offer known (cached), then one counter read.
func (r *ShareReader) readPort(ctx context.Context, cfg ShareConfig, e Entry) error {
	k := portKey{e.SwitchGUID, e.Port}
	old := r.ports[k]
	if old == nil {
		return nil // dropped by a reload meanwhile
	}
	np := *old
	r.tried[k] = time.Now()
	err := r.readInto(ctx, cfg, e, &np)
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		// Refused once, with the reason: what answers at the LID
		// cannot have this port, so no later round asks again while
		// the entry stays in the list.
		np.Refused, np.Err = refused.why, ""
		r.loop.Log().Warn("fabric assignment entry refused: it is not read", "switch", e.SwitchGUID, "switchName", e.SwitchName,
			"port", e.Port, "lid", e.SwitchLID, "reason", refused.why)
		err = nil
	case err != nil:
		np.Errors++
		np.Err = err.Error()
	default:
		np.Err = ""
	}
	r.ports[k] = &np
	return err
}

// refusal is an entry that what answers at its switch's LID says cannot
// be read: the node there is not a switch, or has fewer ports.
type refusal struct{ why string }

func (e *refusal) Error() string { return e.why }

func (r *ShareReader) readInto(ctx context.Context, cfg ShareConfig, e Entry, p *SharePort) error {
	local, err := r.source(ctx, cfg)
	if err != nil {
		return err
	}
	s := r.switches[e.SwitchGUID]
	if s == nil {
		s = &switchState{}
		r.switches[e.SwitchGUID] = s
	}
	if s.checked != r.round {
		s.checked, s.err = r.round, ""
		n, err := r.c.NodeInfo(ctx, local, e.SwitchLID, cfg.Timeout)
		switch {
		case err != nil:
			r.lost(err)
			err = fmt.Errorf("NodeInfo of LID %d (switch %s): %w", e.SwitchLID, e.SwitchGUID, err)
			s.err, s.cpi = err.Error(), nil
			return err
		case n.NodeGUID != e.SwitchGUID:
			s.err = fmt.Sprintf("LID %d is now %s %s, not switch %s (%s): the subnet manager reassigned LIDs; re-run nichealth-fabric plan",
				e.SwitchLID, nodeKind(n.NodeType), n.NodeGUID, e.SwitchGUID, e.SwitchName)
			s.cpi = nil
			return errors.New(s.err)
		case n.NodeType != nodeSwitch:
			// The GUID and LID agree, but they are a CA's (or a
			// router's): a hand-edited or crafted list. Its PMA would
			// answer, with that node's own counters, exported as a
			// switch port's.
			s.refused = fmt.Sprintf("%s at LID %d is a %s, not a switch: only a switch's ports are in a fabric assignment; re-run nichealth-fabric plan",
				e.SwitchGUID, e.SwitchLID, nodeKind(n.NodeType))
			s.cpi = nil
		}
		s.numPorts = n.NumPorts
	}
	if s.refused != "" {
		return &refusal{s.refused}
	}
	if e.Port > s.numPorts {
		return &refusal{fmt.Sprintf("switch %s (%s) has %d ports, so no port %d: re-run nichealth-fabric plan", e.SwitchGUID, e.SwitchName, s.numPorts, e.Port)}
	}
	if s.err == "" && (s.cpi == nil || r.round-s.cpiAt >= cpiEvery) {
		if err := r.classPortInfo(ctx, cfg, local, e, s); err != nil {
			return err
		}
	}
	if s.err != "" {
		return errors.New(s.err)
	}
	if s.cpi == nil {
		return fmt.Errorf("switch %s: its PMA's offer is unknown", e.SwitchGUID)
	}
	c, err := readcore.ReadCounters(ctx, r.c, local, *s.cpi, e.SwitchLID, e.Port, cfg.Timeout)
	if err != nil {
		r.lost(err)
		req := "PortCounters"
		if ce := (*readcore.CounterError)(nil); errors.As(err, &ce) && ce.Extended {
			req = "PortCountersExtended"
		}
		return fmt.Errorf("PMA %s of %s port %d (LID %d): %w", req, e.SwitchName, e.Port, e.SwitchLID, err)
	}
	p.Read, p.ReadAt, p.Counters, p.Wide = true, time.Now(), c.Values(), c.Wide
	return nil
}

// classPortInfo asks the switch's PMA what it offers.
func (r *ShareReader) classPortInfo(ctx context.Context, cfg ShareConfig, local wire.Local, e Entry, s *switchState) error {
	cpi, err := r.c.ClassPortInfo(ctx, local, e.SwitchLID, cfg.Timeout)
	if err != nil {
		r.lost(err)
		err = fmt.Errorf("PMA ClassPortInfo of %s (LID %d): %w", e.SwitchName, e.SwitchLID, err)
		s.err, s.cpi = err.Error(), nil
		return err
	}
	s.cpi, s.cpiAt = &cpi, r.round
	return nil
}

// nodeSwitch is NodeInfo's NodeType of a switch.
const nodeSwitch = 2

// lost forgets the source port after a failure that may mean it is gone
// (no such port, cannot open it): the next read looks for one again.
func (r *ShareReader) lost(err error) {
	var we *wire.Error
	if errors.As(err, &we) && (we.Kind == wire.ErrNoPort || we.Kind == wire.ErrOpen) {
		r.src = wire.Local{}
	}
}

func nodeKind(t int) string {
	switch t {
	case 1:
		return "CA"
	case 2:
		return "switch"
	case 3:
		return "router"
	}
	return "node"
}
