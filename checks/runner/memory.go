package runner

import (
	"encoding/json"
	"fmt"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// memories are the checks' sections of the state file, in list order.
func (r *Runner) memories() []checks.Memory {
	var out []checks.Memory
	for _, e := range r.list {
		if m, ok := e.unit.(checks.Memory); ok {
			out = append(out, m)
		}
	}
	return out
}

// Restore brings back every check's memory from its section (get returns
// a section's bytes, nil when the state file has none). A section that
// cannot be read, or was written by a newer version of its check, starts
// that check fresh and is listed; entries a check finds invalid are
// dropped and listed. Other checks keep what they remembered.
func (r *Runner) Restore(get func(section string) []byte) (dropped []string) {
	for _, m := range r.memories() {
		dropped = append(dropped, m.Restore(get(m.Section()))...)
	}
	return dropped
}

// Store hands every check's section to set, ready to be saved.
func (r *Runner) Store(set func(section string, b []byte)) error {
	for _, m := range r.memories() {
		b, err := m.Marshal()
		if err != nil {
			return fmt.Errorf("encode the %s section of the state: %w", m.Section(), err)
		}
		set(m.Section(), b)
	}
	return nil
}

// Replay hands an event the outbox holds but the state may not include
// (the daemon stopped between the two) to every check: each applies its
// own.
func (r *Runner) Replay(e *event.Event) {
	for _, m := range r.memories() {
		m.Replay(e)
	}
}

// RestoreModel loads the health model from the state file's conditions
// (raw). A state file from before the model has none, and one whose
// conditions are unreadable cannot say them: they are restated from what
// the checks remember, so an upgrade does not turn a latched breach or a
// missing NIC into "healthy" in the views. note says when the recorded
// conditions were unreadable. Checks disabled by a panic before a restart
// are still reported: their conditions clear when they run again; rule
// conditions under a rule's former name are migrated with the first
// cycle.
func (r *Runner) RestoreModel(raw []byte) (m *health.Model, note string) {
	m = health.NewModel()
	restored := false
	if len(raw) > 0 {
		var cs []health.Condition
		if err := json.Unmarshal(raw, &cs); err == nil {
			m.Restore(cs)
			restored = true
			r.adoptReported(cs)
		} else {
			note = fmt.Sprintf("health conditions in the state file are unreadable (%v); rebuilt from the checks' state", err)
		}
	}
	if !restored {
		for _, e := range r.list {
			rs, ok := e.unit.(interface{ Restate() []checks.Restated })
			if !ok {
				continue
			}
			for _, c := range rs.Restate() {
				ev := event.New(c.Spec, event.Stamp{Now: c.Since})
				m.Apply(&ev)
			}
		}
	}
	return m, note
}

// Resume ends the start-up once the state file and the outbox's replay
// restored the checks' memory and the model: every check reconciles its
// memory with the configuration (a counter disabled or removed while the
// daemon was down must not keep its latch forever), checks disabled by a
// panic before the restart are still reported (their conditions clear
// when they run again), and rule conditions under a rule's former name
// are migrated. The events go out with the first cycle.
func (r *Runner) Resume(model *health.Model) {
	r.adoptKernelLog(model)
	for _, e := range r.list {
		if rs, ok := e.unit.(interface{ Resume() []event.Spec }); ok {
			r.pending = append(r.pending, rs.Resume()...)
		}
	}
	var failed []string
	for _, c := range model.Conditions() {
		if c.Entity.Kind == condition.Check {
			failed = append(failed, c.Entity.Name)
		}
	}
	r.g.restore(failed)
	r.pending = append(r.pending, r.migrateRuleChecks(model)...)
}

// adoptKernelLog hands the kernel-log check the conditions the health
// model restored under its name: the check takes on those its memory
// lacks, so every latched one stays acknowledgeable and a repeated record
// raises no duplicate, and settles those past its bounds at start.
func (r *Runner) adoptKernelLog(model *health.Model) {
	var held []kernellog.Held
	for _, c := range model.Conditions() {
		if c.Check != event.KernelLogCheck || c.Entity.Kind != condition.KernelLog {
			continue
		}
		held = append(held, kernellog.Held{Pattern: c.Entity.Name, PCI: c.Entity.PCI, Ports: c.Ports,
			Fatal: c.Severity == health.Fatal, Since: c.Since})
	}
	r.set.kernelLog.Adopt(held)
}

// adoptReported tells the port checks which ports have a state-check
// condition, for a state file written before they remembered what they
// last reported.
func (r *Runner) adoptReported(cs []health.Condition) {
	fatal := map[event.PortRef]bool{}
	for _, c := range cs {
		if c.Entity.Kind != condition.Port || c.Check != event.InfiniBandStateCheck && c.Check != event.EthernetStateCheck {
			continue
		}
		fatal[event.PortRef{Device: c.Entity.Device, Port: c.Entity.Port}] = c.Severity == health.Fatal
	}
	r.set.ports.AdoptReported(fatal)
}

// migrateRuleChecks moves the rule conditions a state file of an older
// build holds under the rules' former check names to their new names, as
// events emitted with the first cycle: a check-scoped clear of each former
// name (so a consumer that keys conditions by check name, NVSentinel's
// node conditions, drops them there), then the same condition raised under
// the new name. Nothing else would ever clear them.
func (r *Runner) migrateRuleChecks(model *health.Model) []event.Spec {
	var clears, raises []event.Spec
	cleared := map[string]bool{}
	for _, c := range model.Conditions() {
		nw, ok := config.LegacyRuleChecks[c.Check]
		if !ok {
			continue
		}
		if !cleared[c.Check] {
			cleared[c.Check] = true
			clears = append(clears, checks.ClearedSpec(c.Check, "renamed "+nw+", the seeds' name; its conditions continue under that name"))
		}
		raises = append(raises, rules.RaiseSpec(rules.Condition{Check: nw, Device: c.Entity.Device, Port: c.Entity.Port,
			Fatal: c.Severity == health.Fatal, Action: c.Action, Message: c.Message}))
	}
	return append(clears, raises...)
}
