package counters

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// ReasonCheckRenamed is the reason (metadata "reason") of the clear that
// moves a latched fatal breach from the degradation check it was raised
// under to its state check.
const ReasonCheckRenamed = "check-renamed"

// moveFatalLatches moves every latched fatal breach raised under a
// degradation check (builds before seed 11.1's naming, DESIGN.md
// difference 2) to the state check of its NIC type: one healthy event
// under the old name that clears exactly that breach (its entities and
// its counter as error code, as its recovery would), then the breach
// raised again under the state check, so that consumers keeping one
// condition per check name (NVSentinel's node conditions) hold it where
// quarantine rules look. The flag records the new name, so the move
// happens once: what a flag says it was raised under is the marker, also
// when the outbox replays a move the state file missed. Keys in order.
//
// A clear by entity and error code, not a check-scoped one (no entities):
// the degradation names still carry other conditions, PCIe AER's fatal
// ones among them, which a check-scoped clear would erase from NVSentinel
// while the daemon holds them.
func (c *Check) moveFatalLatches() []event.Spec {
	var out []event.Spec
	for _, key := range sortedKeys(c.mem.BreachFlags) {
		fl := c.mem.BreachFlags[key]
		nw, former := event.FormerCounterCheck(fl.CheckName)
		if !fl.Breached || !fl.IsFatal || !former {
			continue
		}
		dev, port, name, ok := ParseKey(key)
		if !ok {
			continue
		}
		old := fl.CheckName
		since := fl.Since.UTC().Format(time.RFC3339)
		out = append(out, event.Spec{
			Kind: event.KindCounterRecovered, CheckName: old, IsHealthy: true,
			Message: fmt.Sprintf("Port %s port %d: %s breach latched since %s is reported under %s from now on, with every fatal signal of the NIC; cleared under %s",
				dev, port, name, since, nw, old),
			ErrorCode: []string{name}, Device: dev, Port: port,
			Metadata:  map[string]string{"counter": name, "reason": ReasonCheckRenamed, "breachedSince": since, "checkName": nw},
			Condition: condition.OfCounter(dev, port, name),
		})
		desc := ""
		for _, d := range c.cfg.Table {
			if d.Name == name && d.Description != "" {
				desc = " - " + d.Description
			}
		}
		out = append(out, event.Spec{
			Kind: event.KindCounterBreach, CheckName: nw, IsFatal: true,
			Message: fmt.Sprintf("Port %s port %d: %s%s (breach latched since %s, formerly reported under %s)",
				dev, port, name, desc, since, old),
			ErrorCode: []string{name}, Device: dev, Port: port,
			Metadata:  map[string]string{"counter": name, "breachedSince": since, "formerCheckName": old},
			Condition: condition.OfCounter(dev, port, name),
		})
		fl.CheckName = nw
		c.mem.BreachFlags[key] = fl
	}
	return out
}

// breachedSince is when a replayed breach latched: the metadata of a
// moved breach says, otherwise its event's time.
func breachedSince(e *event.Event) time.Time {
	if t, err := time.Parse(time.RFC3339, e.Metadata["breachedSince"]); err == nil && e.Kind == event.KindCounterBreach {
		return t
	}
	return e.GeneratedTimestamp
}

// portOf is an event's NICPort entity as a number (0 when absent).
func portOf(e *event.Event) int {
	p, _ := strconv.Atoi(e.Port())
	return p
}
