package health

import (
	"slices"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// Model holds the active conditions. It is not safe for concurrent use: the
// daemon's poll loop owns it and publishes Snapshots for everyone else.
type Model struct {
	conds map[condition.Key]Condition
}

// NewModel returns a model with no conditions.
func NewModel() *Model { return &Model{conds: map[condition.Key]Condition{}} }

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
	k, ok := event.KeyOf(e)
	if !ok {
		return false
	}
	ent := k.Entity
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
	if ent.Kind == condition.Card || ent.Kind == condition.PCI || ent.Kind == condition.Node || ent.Kind == condition.KernelLog {
		c.Ports = e.Ports()
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
		if k.Entity.Kind == condition.NIC {
			continue // the NIC is here again, under its new name
		}
		c.Entity.Device = nw
		m.conds[c.Key()] = c
	}
	return m.renamePorts(old, nw) || changed
}

// Has reports whether the condition of (check, entity) is active.
func (m *Model) Has(k condition.Key) bool {
	_, ok := m.conds[k]
	return ok
}

// Each calls f with every active condition, worst first: its key, the
// kind of its raise, whether it is fatal, and since when.
func (m *Model) Each(f func(k condition.Key, kind event.Kind, fatal bool, since time.Time)) {
	for _, c := range m.Conditions() {
		f(c.Key(), c.Kind, c.Severity == Fatal, c.Since)
	}
}
