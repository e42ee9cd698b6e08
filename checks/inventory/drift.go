package inventory

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
)

// What drifted, as drift events' metadata "drift" names it.
const (
	DriftFirmware = "fw_ver"
	DriftModel    = "board_id"
)

// Drift error codes (raise and clear alike).
const (
	ErrorCodeFirmware = "NIC_FW_DRIFT"
	ErrorCodeModel    = "NIC_MODEL_DRIFT"
)

// Card is one monitored card as drift compares it: the identity of its
// lowest monitored function, and its monitored ports.
type Card struct {
	Card      string
	Role      topology.Role
	HCAType   string
	FWVer     string
	BoardID   string
	LinkLayer string
	Devices   []string
	Ports     []event.PortRef
}

// CardsOf folds monitored devices into cards.
func CardsOf(devs []*topology.Device) []Card {
	by := map[string]*Card{}
	first := map[string]string{}
	for _, d := range devs {
		if !d.Monitored() || d.Card == "" || (d.Role != topology.RoleCompute && d.Role != topology.RoleStorage) {
			continue
		}
		c := by[d.Card]
		if c == nil {
			c = &Card{Card: d.Card}
			by[d.Card] = c
		}
		if first[d.Card] == "" || d.PCIAddress < first[d.Card] {
			first[d.Card] = d.PCIAddress
			c.Role, c.HCAType, c.FWVer, c.BoardID, c.LinkLayer = d.Role, d.HCAType, d.FWVer, d.BoardID, d.LinkLayer()
		}
		c.Devices = append(c.Devices, d.Name)
		for _, p := range d.Ports {
			c.Ports = append(c.Ports, event.PortRef{Device: d.Name, Port: p.Num})
		}
	}
	out := make([]Card, 0, len(by))
	for _, c := range by {
		sort.Strings(c.Devices)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Card < out[j].Card })
	return out
}

// FillFromDevlink completes what sysfs left empty of each card (board_id,
// fw_ver: a function whose RDMA device never registered them) with
// devlink's fw.psid and running fw.version for the card's lowest function
// that devlink knows. mlx5 answers both from the same firmware query, so
// where sysfs has a value it stands. It fills cards in place.
func FillFromDevlink(cards []Card, devs []*topology.Device, infos []devlink.Info) []Card {
	if len(infos) == 0 {
		return cards
	}
	byPCI := map[string]devlink.Info{}
	for _, in := range infos {
		if in.Device.Bus == "pci" {
			byPCI[strings.ToLower(in.Device.Name)] = in
		}
	}
	lowest := map[string]devlink.Info{}
	lowestAt := map[string]string{}
	for _, d := range devs {
		in, ok := byPCI[strings.ToLower(d.PCIAddress)]
		if !ok || d.Card == "" {
			continue
		}
		if at, seen := lowestAt[d.Card]; !seen || d.PCIAddress < at {
			lowest[d.Card], lowestAt[d.Card] = in, d.PCIAddress
		}
	}
	for i := range cards {
		in, ok := lowest[cards[i].Card]
		if !ok {
			continue
		}
		if cards[i].BoardID == "" {
			cards[i].BoardID = in.Fixed["fw.psid"]
		}
		if cards[i].FWVer == "" {
			cards[i].FWVer = in.Running["fw.version"]
		}
	}
	return cards
}

// JudgeDrift compares the cards of each role group (DESIGN.md field facts:
// like with like): board_id (the PSID, the card model) among cards of one
// role and hca_type, fw_ver among cards of one role, hca_type and
// board_id (firmware versions belong to a model). The reference is the
// value most cards hold; on a tie, the newest firmware (a card replaced in
// service and never flashed is the older one), while a tie of models names
// no card (nothing says which model is the intended one). A card off the
// reference is a non-fatal finding naming it and the reference; it clears
// when the card matches again or leaves the group. Groups of one card are
// not judged. enabled false clears every finding.
func JudgeDrift(mem *Memory, cards []Card, enabled bool) (specs []event.Spec, changed bool) {
	odd := map[string]oddCard{}
	if enabled {
		for _, g := range group(cards, func(c Card) string { return string(c.Role) + " " + c.HCAType }) {
			findOdd(g, DriftModel, func(c Card) string { return c.BoardID }, false, odd)
		}
		for _, g := range group(cards, func(c Card) string { return string(c.Role) + " " + c.HCAType + " " + c.BoardID }) {
			findOdd(g, DriftFirmware, func(c Card) string { return c.FWVer }, true, odd)
		}
	}
	keys := make([]string, 0, len(odd))
	for k := range odd {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o := odd[k]
		if r, ok := mem.Drift[k]; ok && r.Fault == o.what {
			continue
		}
		check := event.StateCheckFor(o.card.LinkLayer)
		mem.Drift[k] = Raised{Check: check, Fault: o.what, Card: o.card.Card, Ports: o.card.Ports}
		changed = true
		specs = append(specs, event.Spec{
			Kind: event.KindDrift, CheckName: check, Card: o.card.Card, Ports: o.card.Ports,
			Message:   o.message(),
			ErrorCode: []string{driftCode(o.what)},
			Metadata:  map[string]string{"drift": o.what, "value": o.value, "majority": o.ref, "role": string(o.card.Role)},
			Condition: condition.OfCardFinding(o.card.Card, o.what),
		})
	}
	var stale []string
	for k := range mem.Drift {
		if _, ok := odd[k]; !ok {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		r := mem.Drift[k]
		delete(mem.Drift, k)
		changed = true
		why := "it matches its role group again"
		if !enabled {
			why = "drift detection was switched off (inventory.firmwareDrift = false)"
		}
		specs = append(specs, event.Spec{
			Kind: event.KindDriftOK, CheckName: r.Check, IsHealthy: true, Card: r.Card, Ports: r.Ports,
			Message:   fmt.Sprintf("Card %s: %s drift cleared: %s", r.Card, r.Fault, why),
			ErrorCode: []string{driftCode(r.Fault)},
			Metadata:  map[string]string{"drift": r.Fault},
			Condition: condition.OfCardFinding(r.Card, r.Fault),
		})
	}
	return specs, changed
}

func driftCode(what string) string {
	if what == DriftModel {
		return ErrorCodeModel
	}
	return ErrorCodeFirmware
}

// oddCard is a card off its group's reference value.
type oddCard struct {
	card       Card
	what       string
	value, ref string
	peers      int // cards holding the reference
	group      int // cards in the group
}

func (o oddCard) message() string {
	devs := strings.Join(o.card.Devices, ", ")
	if o.what == DriftModel {
		return fmt.Sprintf("Card %s (%s, %s) is board %s, while %d of the %d %s %s cards are %s: another card model in a group of identical ones "+
			"(a replacement of another part number?). Check the part against the node's bill of materials (mlxfwmanager -d %s.0 --query)",
			o.card.Card, o.card.Role, devs, orDefault(o.value, "unknown"), o.peers, o.group, o.card.Role, o.card.HCAType, o.ref, o.card.Card)
	}
	return fmt.Sprintf("Card %s (%s, %s) runs firmware %s, while %d of the %d %s %s %s cards run %s: a card replaced in service and never flashed? "+
		"Flash it to the group's version (mlxfwmanager -d %s.0 -u, then mlxfwreset) so every rail behaves alike",
		o.card.Card, o.card.Role, devs, orDefault(o.value, "unknown"), o.peers, o.group, o.card.Role, o.card.HCAType, o.card.BoardID, o.ref, o.card.Card)
}

func group(cards []Card, key func(Card) string) [][]Card {
	by := map[string][]Card{}
	var order []string
	for _, c := range cards {
		k := key(c)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], c)
	}
	out := make([][]Card, 0, len(order))
	for _, k := range order {
		out = append(out, by[k])
	}
	return out
}

// findOdd records the cards of g whose value is not the group's
// reference. A card whose value is unknown ("") is not judged.
func findOdd(g []Card, what string, value func(Card) string, newestWins bool, odd map[string]oddCard) {
	if len(g) < 2 {
		return
	}
	count := map[string]int{}
	for _, c := range g {
		if v := value(c); v != "" {
			count[v]++
		}
	}
	ref, best, tie := "", 0, false
	for v, n := range count {
		switch {
		case n > best:
			ref, best, tie = v, n, false
		case n == best:
			tie = true
			if newestWins && newerVersion(v, ref) || !newestWins && v < ref {
				ref = v
			}
		}
	}
	if len(count) < 2 || tie && !newestWins {
		return
	}
	for _, c := range g {
		if v := value(c); v != "" && v != ref {
			odd[DriftKey(c.Card, what)] = oddCard{card: c, what: what, value: v, ref: ref, peers: count[ref], group: len(g)}
		}
	}
}

// newerVersion compares dotted firmware versions ("28.39.1002") by their
// numbers; a part that is not a number compares as text.
func newerVersion(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, errx := strconv.Atoi(pa[i])
		y, erry := strconv.Atoi(pb[i])
		switch {
		case errx == nil && erry == nil && x != y:
			return x > y
		case (errx != nil || erry != nil) && pa[i] != pb[i]:
			return pa[i] > pb[i]
		}
	}
	return len(pa) > len(pb)
}
