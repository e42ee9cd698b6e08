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
// lowest monitored function (Address), and its monitored ports.
type Card struct {
	Card      string
	Address   string
	Role      topology.Role
	HCAType   string
	FWVer     string
	BoardID   string
	LinkLayer string
	Devices   []string
	Ports     []event.PortRef
	// SwappedFrom is the PSID its slot held before this boot's card, when
	// the expected inventory saw it change this boot (a swapped card);
	// "" otherwise.
	SwappedFrom string
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
			c.Address, c.Role, c.HCAType, c.FWVer, c.BoardID, c.LinkLayer = d.PCIAddress, d.Role, d.HCAType, d.FWVer, d.BoardID, d.LinkLayer()
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

// JudgeDrift judges firmware among the cards of one PSID (board_id, the
// card model) and model changes slot by slot (DESIGN.md difference 20):
//   - fw_ver is compared among the cards of one hca_type and PSID,
//     whatever their role: firmware belongs to a product, and one product
//     flashed two ways behaves two ways. The reference is the version most
//     cards run; on a tie, the newest (a card replaced in service and
//     never flashed is the older one). Cards of an unknown PSID or
//     firmware are not judged, groups of one card neither;
//   - different PSIDs side by side are different products, never drift: a
//     DGX H100 ships dual-port cards (MT_0000000834) beside its compute
//     cards (MT_0000000838), in one role when both run InfiniBand;
//   - a card whose slot held another PSID before this boot's card
//     (Card.SwappedFrom: a swapped card) is a finding naming both.
//
// A finding is non-fatal, on the card; it clears when the card matches
// again or leaves. enabled false clears every finding.
func JudgeDrift(mem *Memory, cards []Card, enabled bool) (specs []event.Spec, changed bool) {
	odd := map[string]oddCard{}
	if enabled {
		var known []Card
		for _, c := range cards {
			if c.BoardID != "" {
				known = append(known, c)
			}
			if c.SwappedFrom != "" && c.SwappedFrom != c.BoardID {
				odd[DriftKey(c.Card, DriftModel)] = oddCard{card: c, what: DriftModel, value: c.BoardID, ref: c.SwappedFrom}
			}
		}
		for _, g := range group(known, func(c Card) string { return c.HCAType + " " + c.BoardID }) {
			findOdd(g, DriftFirmware, func(c Card) string { return c.FWVer }, odd)
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
			Metadata:  o.metadata(),
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
		why := "its firmware matches the other cards of its model again"
		if r.Fault == DriftModel {
			why = "it is no longer reported as a swapped card (acknowledged, or its slot holds the earlier model again)"
		}
		if !enabled {
			why = "drift detection was switched off (inventory.firmwareDrift = false)"
		}
		specs = append(specs, event.Spec{
			Kind: event.KindDriftOK, CheckName: r.Check, IsHealthy: true, Card: r.Card, Ports: r.Ports,
			Message:   fmt.Sprintf("Card %s: %s finding cleared: %s", r.Card, r.Fault, why),
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
		return fmt.Sprintf("Card %s (%s, %s) is board %s; before this boot its slot held board %s: the card was swapped for another model "+
			"(a replacement of another part number?). Check the part against the node's bill of materials (mlxfwmanager -d %s.0 --query); "+
			"if the new model is intended, `nichealthctl ack %s` says so (the finding also ends at the next boot)",
			o.card.Card, o.card.Role, devs, o.value, o.ref, o.card.Card, o.card.Address)
	}
	return fmt.Sprintf("Card %s (%s, %s) runs firmware %s, while %d of the %d %s %s cards run %s: a card replaced in service and never flashed? "+
		"Flash it to its model's version (mlxfwmanager -d %s.0 -u, then mlxfwreset) so every rail behaves alike",
		o.card.Card, o.card.Role, devs, orDefault(o.value, "unknown"), o.peers, o.group, o.card.BoardID, o.card.HCAType, o.ref, o.card.Card)
}

func (o oddCard) metadata() map[string]string {
	md := map[string]string{"drift": o.what, "value": o.value, "role": string(o.card.Role), "boardID": o.card.BoardID}
	if o.what == DriftModel {
		md["previous"] = o.ref
	} else {
		md["majority"] = o.ref
	}
	return md
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
// reference (the most common; on a tie the newest version). A card whose
// value is unknown ("") is not judged.
func findOdd(g []Card, what string, value func(Card) string, odd map[string]oddCard) {
	if len(g) < 2 {
		return
	}
	count := map[string]int{}
	for _, c := range g {
		if v := value(c); v != "" {
			count[v]++
		}
	}
	ref, best := "", 0
	for v, n := range count {
		switch {
		case n > best:
			ref, best = v, n
		case n == best:
			if newerVersion(v, ref) {
				ref = v
			}
		}
	}
	if len(count) < 2 {
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

// AcknowledgeSwap is the operator's word that the card at addr (any of its
// functions) was swapped for another model on purpose: the swap is
// forgotten and its finding cleared. ok is false when no swap of this
// boot is known for that card.
func AcknowledgeSwap(mem *Memory, exp *Expected, addr, boot, who string) (specs []event.Spec, ok bool) {
	card := topology.CardOf(addr)
	for a, f := range exp.Functions {
		if topology.CardOf(a) != card || exp.Swapped(a, boot) == "" {
			continue
		}
		f.SwappedFrom, f.SwappedBoot = "", ""
		exp.Functions[a] = f
		ok = true
	}
	if !ok {
		return nil, false
	}
	k := DriftKey(card, DriftModel)
	if r, raised := mem.Drift[k]; raised {
		delete(mem.Drift, k)
		specs = append(specs, event.Spec{
			Kind: event.KindDriftOK, CheckName: r.Check, IsHealthy: true, Card: r.Card, Ports: r.Ports,
			Message:   fmt.Sprintf("Card %s: %s finding cleared: the swap for another model was acknowledged by %s", r.Card, r.Fault, who),
			ErrorCode: []string{driftCode(r.Fault)},
			Metadata:  map[string]string{"drift": r.Fault},
			Condition: condition.OfCardFinding(r.Card, r.Fault),
		})
	}
	return specs, true
}
