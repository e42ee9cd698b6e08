package health

import (
	"slices"
	"strconv"

	"github.com/nichealth/nichealthd/checks/event"
)

// Model holds the active conditions. It is not safe for concurrent use: the
// daemon's poll loop owns it and publishes Snapshots for everyone else.
type Model struct {
	conds map[Key]Condition
}

// NewModel returns a model with no conditions.
func NewModel() *Model { return &Model{conds: map[Key]Condition{}} }

// Len is the number of active conditions.
func (m *Model) Len() int { return len(m.conds) }

// Conditions returns the active conditions, worst first.
func (m *Model) Conditions() []Condition {
	out := make([]Condition, 0, len(m.conds))
	for _, c := range m.conds {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Condition) int { return compareConditions(&a, &b) })
	return out
}

// InsertCondition adds c to conds (sorted worst first, as Conditions
// returns them) in its place, for a condition the daemon shows about
// itself without an event (it cannot be one: the outbox refuses events).
func InsertCondition(conds []Condition, c Condition) []Condition {
	i, _ := slices.BinarySearchFunc(conds, c, func(a, b Condition) int { return compareConditions(&a, &b) })
	return slices.Insert(conds, i, c)
}

// Restore replaces the model's conditions (from the state file).
func (m *Model) Restore(cs []Condition) {
	clear(m.conds)
	for _, c := range cs {
		m.conds[c.Key()] = c
	}
}

// Raise sets a condition, replacing the one of the same key.
func (m *Model) Raise(c Condition) { m.conds[c.Key()] = c }

// Apply folds one emitted event into the model and reports whether the set
// of conditions changed. An event that is neither a raise nor a clear
// leaves it unchanged.
func (m *Model) Apply(e *event.Event) bool {
	switch e.Kind {
	case event.KindCheckCleared:
		return m.clearCheck(e.CheckName)
	case event.KindDeviceReappeared:
		if nw := e.Metadata["newName"]; nw != "" {
			return m.rename(e.Device(), nw)
		}
	}
	ent, ok := EntityOf(e)
	if !ok {
		return false
	}
	k := Key{Check: e.CheckName, Entity: ent}
	if e.IsHealthy {
		if _, had := m.conds[k]; !had {
			return false
		}
		delete(m.conds, k)
		return true
	}
	sev := NonFatal
	if e.IsFatal {
		sev = Fatal
	}
	c := Condition{Check: e.CheckName, Entity: ent, Severity: sev, Kind: e.Kind, Message: e.Message,
		Action: e.RecommendedAction, Since: e.GeneratedTimestamp, EventID: e.ID}
	if old, had := m.conds[k]; had {
		// A re-grade keeps when the trouble started.
		c.Since = old.Since
	}
	if ent.Kind == EntityCard || ent.Kind == EntityPCI || ent.Kind == EntityNode || ent.Kind == EntityKernelLog {
		c.Ports = portsOf(e)
	}
	m.conds[k] = c
	return true
}

func (m *Model) clearCheck(check string) bool {
	changed := false
	for k := range m.conds {
		if k.Check == check {
			delete(m.conds, k)
			changed = true
		}
	}
	return changed
}

// rename moves every condition of a device to its new name: a NIC renamed
// under the same PCI address is the same NIC.
func (m *Model) rename(old, nw string) bool {
	changed := false
	for k, c := range m.conds {
		if k.Entity.Device != old {
			continue
		}
		delete(m.conds, k)
		changed = true
		if k.Entity.Kind == EntityNIC {
			continue // the NIC is here again, under its new name
		}
		c.Entity.Device = nw
		m.conds[c.Key()] = c
	}
	return m.renamePorts(old, nw) || changed
}

// Names of the inventory's conditions: the one condition of a PCI
// function (EntityPCI) and the node's expected compute ports (EntityNode).
const (
	InventoryName     = "inventory"
	ExpectedPortsName = "expected-ports"
)

// EntityOf says which entity an event is about. The kinds with a finer
// entity than the port (counters, hung files, sanity findings) keep one
// condition each, so one counter's recovery does not clear another's
// breach; a card event names its card (metadata "card"); otherwise the
// port, the NIC, or the node.
func EntityOf(e *event.Event) (Entity, bool) {
	dev := e.Device()
	port, _ := strconv.Atoi(e.Port())
	if card := cardOf(e); card != "" && (e.Kind == event.KindCardAnomaly || e.Kind == event.KindCardRecovered) {
		return Entity{Kind: EntityCard, Card: card}, true
	}
	switch e.Kind {
	case event.KindCheckFailed, event.KindCheckResumed:
		if name := e.Metadata["check"]; name != "" {
			return Entity{Kind: EntityCheck, Name: name}, true
		}
		return Entity{}, false
	case event.KindFunctionFailed, event.KindFunctionAbsent, event.KindFunctionOK:
		// One condition per function, whatever is wrong with it: a
		// function that goes from unbound to gone is re-graded, not
		// raised twice.
		if e.Metadata["pci"] == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityPCI, PCI: e.Metadata["pci"], Name: InventoryName}, true
	case event.KindDrift, event.KindDriftOK:
		if card := cardOf(e); card != "" && e.Metadata["drift"] != "" {
			return Entity{Kind: EntityCard, Card: card, Name: e.Metadata["drift"]}, true
		}
		return Entity{}, false
	case event.KindPortsShort, event.KindPortsOK:
		return Entity{Kind: EntityNode, Name: ExpectedPortsName}, true
	case event.KindPCIeAER, event.KindPCIeAERRecovered:
		if e.Metadata["pci"] == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityPCI, PCI: e.Metadata["pci"], Name: e.Metadata["aer"]}, true
	case event.KindKernelLog, event.KindKernelLogCleared:
		// One condition per pattern and function, whatever ports the
		// function had when it was raised.
		if e.Metadata["pattern"] == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityKernelLog, PCI: e.Metadata["pci"], Name: e.Metadata["pattern"]}, true
	case event.KindNoSubnetManager, event.KindSubnetManagerFound:
		// One condition per role group, covering the group's ports.
		return Entity{Kind: EntityNode, Name: "no-subnet-manager " + e.Metadata["role"]}, true
	case event.KindCounterSaturated, event.KindCounterUnsaturated, event.KindCongestion, event.KindCongestionCleared:
		// Keyed by their own error code ("saturated:link_downed",
		// "congestion"), never by the counter's name: a saturated
		// link_downed must not replace, or be cleared with, its latched
		// fatal breach.
		if len(e.ErrorCode) != 1 || dev == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityCounter, Device: dev, Port: port, Name: e.ErrorCode[0]}, true
	case event.KindCounterBreach, event.KindCounterRecovered, event.KindCounterBaseline:
		name := e.Metadata["counter"]
		if name == "" && len(e.ErrorCode) == 1 {
			name = e.ErrorCode[0]
		}
		if name == "" || dev == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityCounter, Device: dev, Port: port, Name: name}, true
	case event.KindReadStuck, event.KindReadRecovered, event.KindReadParked, event.KindReadResumed:
		f := e.Metadata["file"]
		if f == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityFile, Device: dev, Port: port, Name: f}, true
	case event.KindLinkSanity, event.KindLinkSanityOK:
		if hop := e.Metadata["pciHop"]; hop != "" {
			// A slow link on the PCIe path is one finding whatever the
			// NICs below it (their ports are the event's entities).
			name := e.Metadata["finding"]
			if name == "" && len(e.ErrorCode) > 0 {
				name = e.ErrorCode[0] // written before findings named their kind
			}
			if name == "" {
				return Entity{}, false
			}
			return Entity{Kind: EntityPCI, PCI: hop, Name: name}, true
		}
		if len(e.ErrorCode) != 1 {
			return Entity{}, false
		}
		return Entity{Kind: EntityFinding, Device: dev, Port: port, Name: e.ErrorCode[0]}, true
	case event.KindDeviceDisappeared, event.KindDeviceReappeared:
		if dev == "" {
			return Entity{}, false
		}
		return Entity{Kind: EntityNIC, Device: dev}, true
	}
	switch {
	case dev != "" && port > 0:
		return Entity{Kind: EntityPort, Device: dev, Port: port}, true
	case dev != "":
		return Entity{Kind: EntityNIC, Device: dev}, true
	}
	return Entity{Kind: EntityNode}, true
}

func cardOf(e *event.Event) string {
	if c := e.Metadata["card"]; c != "" {
		return c
	}
	for _, en := range e.EntitiesImpacted {
		if en.Type == event.EntityCard {
			return en.Value
		}
	}
	return ""
}

// portsOf lists the (NIC, NICPort) pairs of an event, in order: a card
// event names the ports below its peers' mode that way (seed 11.2).
func portsOf(e *event.Event) []PortRef {
	var out []PortRef
	dev := ""
	for _, en := range e.EntitiesImpacted {
		switch en.Type {
		case event.EntityNIC:
			dev = en.Value
		case event.EntityNICPort:
			if p, err := strconv.Atoi(en.Value); err == nil && dev != "" {
				out = append(out, PortRef{Device: dev, Port: p})
			}
		}
	}
	return out
}

// Has reports whether the condition of (check, entity) is active.
func (m *Model) Has(check string, e Entity) bool {
	_, ok := m.conds[Key{Check: check, Entity: e}]
	return ok
}
