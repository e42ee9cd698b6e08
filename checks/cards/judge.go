package cards

import (
	"fmt"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// ErrorCode is the error code of a card anomaly and of its clear: a
// consumer that clears by entity and error code (NVSentinel's platform
// connector) must not let a port's own recovery, which names the same
// NIC and NICPort, remove the card's condition (DESIGN.md difference 13).
const ErrorCode = "card-anomaly"

// Input is one cycle's view of the cards.
type Input struct {
	// Cards are every monitored card (Group), judged or not.
	Cards []CardState
	// OwnFatal reports whether a port has a fatal condition of its own
	// (its state check reported it DOWN or Disabled).
	OwnFatal func(event.PortRef) bool
	// Gone counts, per card, the ports of the card's NICs reported
	// disappeared: each is already fatal on its own.
	Gone map[string]int
	Now  time.Time
	// Hold is cardAnomalyHold (0: a shortfall is an anomaly at once).
	Hold time.Duration
}

// Judge runs card homogeneity for one cycle and returns the events of the
// anomalies raised and cleared, in card order, and whether the memory
// changed. A card below its peers' mode (Assess) becomes an anomaly only
// once its shortfall has lasted Hold, at the first poll as later
// (DESIGN.md difference 4). The anomaly names only the ports it explains:
// the card's inactive ports that are not fatal on their own. When every
// port the card lacks is already fatal on its own (a DOWN port, a NIC that
// disappeared), there is no anomaly: one cable pull is one fatal
// condition, not two. When the card lacks ports it does not even show (a
// PCI function missing since boot), the anomaly names the card's present
// ports, the only handle the card has. A raised anomaly whose ports change
// is cleared and raised again with the new ones, so its clear always names
// what its raise named.
func (m *Memory) Judge(in Input) ([]event.Spec, bool) {
	var specs []event.Spec
	changed := false
	seen := make(map[string]bool, len(in.Cards))
	for _, v := range Assess(in.Cards) {
		seen[v.Card] = true
		latched, isLatched := m.Anomalies[v.Card]
		if !v.Anomalous {
			if _, ok := m.Short[v.Card]; ok {
				delete(m.Short, v.Card)
				changed = true
			}
			if isLatched {
				why := HealthyMessage(v.Card, v.Role, v.Active, v.Expected)
				if v.Skip != "" {
					why = fmt.Sprintf("Card %s (%s) is no longer compared with peers (%s); its anomaly is cleared", v.Card, v.Role, v.Skip)
				}
				specs = append(specs, m.recovered(v.Card, latched, why))
				changed = true
			}
			continue
		}
		since, short := m.Short[v.Card]
		if !short {
			since = in.Now
			m.Short[v.Card] = since
			changed = true
		}
		if in.Now.Sub(since) < in.Hold {
			continue // a blip so far; a latch from a longer hold stays as it is
		}
		ports := explained(v, in.OwnFatal, in.Gone[v.Card])
		switch {
		case len(ports) == 0 && isLatched:
			specs = append(specs, m.recovered(v.Card, latched, fmt.Sprintf(
				"Card %s (%s): every port it lacks against its peers is now reported on its own; the card anomaly is cleared", v.Card, v.Role)))
			changed = true
		case len(ports) == 0:
		case isLatched && slices.Equal(ports, latched.Ports):
		default:
			if isLatched {
				specs = append(specs, m.recovered(v.Card, latched, fmt.Sprintf(
					"Card %s (%s): the ports below its peers changed; raised again with the current ones", v.Card, v.Role)))
			}
			specs = append(specs, m.raise(v, ports, since))
			changed = true
		}
	}
	for _, card := range m.Anomalies.Keys() {
		if !seen[card] {
			// Every monitored function of the card is gone: its NICs'
			// disappearance is what says so now.
			specs = append(specs, m.recovered(card, m.Anomalies[card], fmt.Sprintf(
				"Card %s is no longer among the monitored cards; its anomaly is cleared", card)))
			changed = true
		}
	}
	for card := range m.Short {
		if !seen[card] {
			delete(m.Short, card)
			changed = true
		}
	}
	return specs, changed
}

// explained lists the ports an anomalous card's condition names: its
// inactive ports not fatal on their own; its present ports when it lacks
// more than its inactive ports (a function or port missing altogether);
// none when the ports fatal on their own account for the whole shortfall.
func explained(v Verdict, ownFatal func(event.PortRef) bool, gone int) []event.PortRef {
	short := v.Expected - v.Active
	own := gone
	var rest []event.PortRef
	for _, p := range v.Inactive {
		if ownFatal != nil && ownFatal(p) {
			own++
			continue
		}
		rest = append(rest, p)
	}
	if short <= own {
		return nil
	}
	if len(rest) == 0 {
		return slices.Clone(v.Present)
	}
	return rest
}

func (m *Memory) raise(v Verdict, ports []event.PortRef, since time.Time) event.Spec {
	check := event.StateCheckFor(v.LinkLayer)
	m.Anomalies.Raise(v.Card, Latched{Role: string(v.Role), Active: v.Active, Expected: v.Expected, Since: since, Check: check, Ports: ports})
	return event.Spec{
		Kind: event.KindCardAnomaly, CheckName: check, IsFatal: true, Card: v.Card, Ports: ports,
		ErrorCode: []string{ErrorCode},
		Message:   Anomaly{Card: v.Card, Role: v.Role, Active: v.Active, Expected: v.Expected}.Message(),
		Metadata: map[string]string{"role": string(v.Role), "active": fmt.Sprint(v.Active), "expected": fmt.Sprint(v.Expected),
			"shortSince": since.UTC().Format(time.RFC3339)},
		Condition: condition.OfCard(v.Card),
	}
}

// recovered clears card's anomaly: the event says the same check and
// ports the raise did.
func (m *Memory) recovered(card string, l Latched, message string) event.Spec {
	m.Anomalies.Clear(card)
	check := l.Check
	if check == "" {
		check = event.InfiniBandStateCheck
	}
	return event.Spec{
		Kind: event.KindCardRecovered, CheckName: check, IsHealthy: true, Card: card, Ports: l.Ports,
		ErrorCode: []string{ErrorCode}, Message: message,
		Metadata:  map[string]string{"role": l.Role},
		Condition: condition.OfCard(card),
	}
}
