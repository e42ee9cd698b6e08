package cards

import (
	"fmt"
	"sort"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// CardState is one physical card (PCI domain:bus:device) as the
// homogeneity check sees it. Functions, Ports and Active count only the
// card's monitored functions: a card whose other function is management
// (it carries the default route) is compared by what is monitored on it.
type CardState struct {
	Card    string
	Role    topology.Role
	HCAType string
	// BoardID is the card's PSID (board_id): the card model, which tells
	// a storage card with an uncabled-by-design IB port from a compute HCA
	// of the same hca_type.
	BoardID string
	// LinkLayer is that of the card's lowest function: its events use
	// that link layer's state check.
	LinkLayer string
	Functions int
	Ports     int
	Active    int
	// Present lists the card's monitored ports in discovery order;
	// Inactive those of them that are not active.
	Present  []event.PortRef
	Inactive []event.PortRef
}

// Anomaly is a card with fewer active ports than its group's mode.
type Anomaly struct {
	Card     string
	Role     topology.Role
	Active   int
	Expected int
	Group    string
}

// Message is the operator text of seed 7.2 case 3, with the role of seed
// 4.3.3.
func (a Anomaly) Message() string {
	return fmt.Sprintf("Card %s (%s) has %d active ports, expected %d (peer mode)", a.Card, a.Role, a.Active, a.Expected)
}

// HealthyMessage is the counterpart of Anomaly.Message for a card that
// matches (or beats) its peers, e.g. after a cable is replugged.
func HealthyMessage(card string, role topology.Role, active, mode int) string {
	return fmt.Sprintf("Card %s (%s) has %d active ports, matching peer mode %d", card, role, active, mode)
}

// Verdict is the outcome for one card: anomalous, healthy against its
// peers' mode, or not judged (Skip says why).
type Verdict struct {
	CardState
	Group     string
	Expected  int // the group's mode; 0 when skipped
	Anomalous bool
	Skip      string
}

// Message returns the anomaly or healthy message; "" for a skipped card.
func (v Verdict) Message() string {
	switch {
	case v.Skip != "":
		return ""
	case v.Anomalous:
		return Anomaly{Card: v.Card, Role: v.Role, Active: v.Active, Expected: v.Expected, Group: v.Group}.Message()
	}
	return HealthyMessage(v.Card, v.Role, v.Active, v.Expected)
}

// PortActive is the seed's notion of an active port (sysfs.Link.Up) as
// discovery read it. Unparsable strings are not active.
func PortActive(_ *topology.Device, p *topology.Port) bool {
	s, _ := sysfs.ParseState([]byte(p.State))
	ph, _ := sysfs.ParsePhysState([]byte(p.PhysState))
	return sysfs.Link{State: s, Phys: ph}.Up()
}

// Group folds the monitored devices (Mellanox PFs with role Compute or
// Storage and a known card) into cards, sorted by card. The card's role,
// HCA type, board and link layer are those of its lowest function.
// isActive decides whether a port counts as active; nil means PortActive.
func Group(devs []*topology.Device, isActive func(dev *topology.Device, port *topology.Port) bool) []CardState {
	if isActive == nil {
		isActive = PortActive
	}
	type acc struct {
		CardState
		first string // lowest PCI address seen, decides role, HCA type and board
	}
	byCard := map[string]*acc{}
	for _, d := range devs {
		if d == nil || !d.Mellanox || d.IsVF || d.Card == "" {
			continue
		}
		if d.Role != topology.RoleCompute && d.Role != topology.RoleStorage {
			continue
		}
		a, ok := byCard[d.Card]
		if !ok {
			a = &acc{CardState: CardState{Card: d.Card}}
			byCard[d.Card] = a
		}
		if a.first == "" || d.PCIAddress < a.first {
			a.first, a.Role, a.HCAType, a.BoardID, a.LinkLayer = d.PCIAddress, d.Role, d.HCAType, d.BoardID, d.LinkLayer()
		}
		a.Functions++
		for i := range d.Ports {
			a.Ports++
			ref := event.PortRef{Device: d.Name, Port: d.Ports[i].Num}
			a.Present = append(a.Present, ref)
			if isActive(d, &d.Ports[i]) {
				a.Active++
			} else {
				a.Inactive = append(a.Inactive, ref)
			}
		}
	}
	out := make([]CardState, 0, len(byCard))
	for _, a := range byCard {
		out = append(out, a.CardState)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Card < out[j].Card })
	return out
}

// groupKey compares only like with like (DESIGN.md field facts): same
// role, same hca_type and same board_id (PSID, the card model). A storage
// card whose IB port 1 is uncabled by design while port 2 carries Ethernet
// has its own PSID, so it is never measured against single-port compute
// HCAs. Nothing the failure itself changes is in the key: a card that lost
// a PCI function or a port still meets its peers, which is how a NIC that
// fell off the bus before the daemon started is found (seed 7.2 case 3).
func groupKey(c CardState) string {
	hca := c.HCAType
	if hca == "" {
		hca = "unknown-hca"
	}
	board := c.BoardID
	if board == "" {
		board = "unknown-board"
	}
	return fmt.Sprintf("%s %s %s", c.Role, hca, board)
}

// Assess judges every card against the mode of active-port counts of its
// group (seed 4.3.3). A group is skipped when it holds a single card (no
// peers) or when its mode is 0 (most peers down says nothing about what
// healthy looks like); when two counts tie for most common, the higher
// one is the mode (DESIGN.md difference 4): seed 4.3.4's two-card storage
// group with a card at 0 is "0 < mode 1 → FATAL". A card with fewer
// active ports than the mode is anomalous; one with as many or more is
// healthy. Verdicts are sorted by card.
func Assess(cards []CardState) []Verdict {
	groups := map[string][]int{}
	var order []string
	for i, c := range cards {
		k := groupKey(c)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]Verdict, 0, len(cards))
	for _, k := range order {
		idx := groups[k]
		mode, skip := groupMode(cards, idx)
		for _, i := range idx {
			v := Verdict{CardState: cards[i], Group: k, Skip: skip}
			if skip == "" {
				v.Expected = mode
				v.Anomalous = cards[i].Active < mode
			}
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Card < out[j].Card })
	return out
}

// groupMode is the most common active-port count of the cards idx, the
// higher count on a tie, or why the group is not judged.
func groupMode(cards []CardState, idx []int) (int, string) {
	if len(idx) < 2 {
		return 0, "only card of its kind: no peers to compare with"
	}
	count := map[int]int{}
	for _, i := range idx {
		count[cards[i].Active]++
	}
	mode, best := 0, 0
	for v, n := range count {
		if n > best || n == best && v > mode {
			mode, best = v, n
		}
	}
	if mode == 0 {
		return 0, "most peers have no active port"
	}
	return mode, ""
}

// Evaluate returns the anomalous cards of Assess.
func Evaluate(cards []CardState) []Anomaly {
	var out []Anomaly
	for _, v := range Assess(cards) {
		if v.Anomalous {
			out = append(out, Anomaly{Card: v.Card, Role: v.Role, Active: v.Active, Expected: v.Expected, Group: v.Group})
		}
	}
	return out
}
