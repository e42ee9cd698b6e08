package counters

// On a RoCE port two counters witness the same link down: the PMA's
// link_downed (8 bits, stuck at 255 on a flapping port) and mlx5's
// link_down_events_phy (64 bits). Both stay monitored, because either may
// be the only one that moves (link_downed saturated, or the PHY statistic
// missing on older firmware), but one link down is one condition: the
// operator acknowledges one latch, not two. A breach of a counter whose
// twin is latched on the same port is the same link down (or a later one
// that latched condition already covers): its snapshot moves, it raises
// nothing.
var linkDownTwin = map[string]string{
	"link_downed":          "link_down_events_phy",
	"link_down_events_phy": "link_downed",
}

// twinLatched is the twin of counter name latched on device/port, or "".
func twinLatched(st *Memory, device string, port int, name string) string {
	twin, ok := linkDownTwin[name]
	if !ok {
		return ""
	}
	if f := st.BreachFlags[Key(device, port, twin)]; f.Breached {
		return twin
	}
	return ""
}

// twinWitnesses says, for a breach of name on a port of linkLayer, which
// twin also witnesses it ("" when it has none there, or it is disabled).
func (e *Evaluator) twinWitnesses(name, linkLayer string) string {
	twin, ok := linkDownTwin[name]
	if !ok {
		return ""
	}
	d, known := e.defs[twin]
	if !known || !d.Enabled || !d.AppliesTo(linkLayer) {
		return ""
	}
	return twin
}
