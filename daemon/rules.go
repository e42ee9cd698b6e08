package daemon

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// The seeds' analyzer rules (flap, drop, repeated degradation) run on the
// node after each poll (DESIGN.md difference 8). They read what the poll
// observed and the health model's conditions, and their raises and clears
// are events like any check's, folded into the same model.

// effectiveRules is the [rules] configuration with the rules that --checks
// (or the checks key) leaves out switched off.
func effectiveRules(cfg *config.Config) rules.Config {
	r := cfg.Rules
	r.Flap.Enabled = r.Flap.Enabled && cfg.Checks[rules.FlapCheck]
	r.Drop.Enabled = r.Drop.Enabled && cfg.Checks[rules.DropCheck]
	r.Degradation.Enabled = r.Degradation.Enabled && cfg.Checks[rules.DegradationCheck]
	return r
}

// rulesSection is the state file section of the rules' windows.
const rulesSection = "rules"

// restoreRules resumes the rules' windows from the state file: windows of
// another boot are dropped by the engine itself, so they clear on reboot.
func restoreRules(st *persist.State, cfg rules.Config, bootID string) (*rules.Engine, string) {
	var rs rules.State
	note := ""
	if raw := st.Section(rulesSection); len(raw) > 0 {
		if err := json.Unmarshal(raw, &rs); err != nil {
			note = fmt.Sprintf("checks[%q]: unreadable (%v); the rules' windows start fresh", rulesSection, err)
			rs = rules.State{}
		}
	}
	return rules.New(cfg, rs, bootID), note
}

// storeRules writes the rules' windows into st.
func storeRules(st *persist.State, e *rules.Engine) error {
	b, err := json.Marshal(e.State())
	if err != nil {
		return fmt.Errorf("encode the rules section of the state: %w", err)
	}
	st.SetSection(rulesSection, b)
	return nil
}

// ruleReadings is what the rules need of each monitored port: its state
// and its link-down witnesses. A port that is DOWN without a condition of
// the state check (unprovisioned on first sight, DESIGN.md difference 4)
// is passed as unknown: an uncabled port has not dropped.
func (m *Monitor) ruleReadings(buf []rules.Port, model *health.Model) []rules.Port {
	buf = buf[:0]
	for _, p := range m.ports {
		rp := rules.Port{Device: p.dev.Name, Port: p.port.Num}
		if p.observed {
			rp.State = p.obs.State.Name
			if p.obs.State.ID == sysfs.StateDown && !model.Has(checks.StateCheckFor(p.port.LinkLayer),
				health.Entity{Kind: health.EntityPort, Device: p.dev.Name, Port: p.port.Num}) {
				rp.State = ""
			}
		}
		for ci := range p.counters {
			cr := &p.counters[ci]
			for _, di := range cr.defs {
				var dst *rules.Reading
				switch m.defs[di].Name {
				case "link_downed":
					dst = &rp.LinkDowned
				case "carrier_changes":
					dst = &rp.CarrierChanges
				case phyLinkDownEvents:
					dst = &rp.LinkDownEvents
				default:
					continue
				}
				if raw, err := cr.sample(); err == nil {
					if v, err := sysfs.ParseCounter(raw); err == nil {
						*dst = rules.Reading{Value: v, OK: true}
					}
				}
			}
		}
		buf = append(buf, rp)
	}
	return buf
}

// degradedOf lists the conditions RepeatedNICDegradation counts: the
// non-fatal degradation events of a port itself, its state (INIT, ARMED,
// Polling, LinkErrorRecovery, a RoCE netdev down) and its counters' breaches
// (DESIGN.md difference 15). Monitoring conditions are not the port
// degrading: a parked file or a hung read is the driver refusing a query,
// a sanity finding or a PCIe AER condition is about the slot or the path,
// a saturated counter is lost visibility and congestion is the fabric's.
func degradedOf(conds []health.Condition) []rules.Degraded {
	var out []rules.Degraded
	for _, c := range conds {
		if c.Severity != health.NonFatal || c.Entity.Device == "" || c.Entity.Port == 0 || isRuleCheck(c.Check) {
			continue
		}
		if c.Kind != event.KindPortNonFatal && c.Kind != event.KindCounterBreach {
			continue
		}
		out = append(out, rules.Degraded{Key: c.Check + "|" + c.Entity.String(), Device: c.Entity.Device, Port: c.Entity.Port, Since: c.Since})
	}
	return out
}

func isRuleCheck(name string) bool {
	return name == rules.FlapCheck || name == rules.DropCheck || name == rules.DegradationCheck
}

// ruleSpecs turns the rules' changes into events.
func ruleSpecs(changes []rules.Change) []event.Spec {
	out := make([]event.Spec, 0, len(changes))
	for _, ch := range changes {
		c := ch.Condition
		if ch.Raise {
			action := c.Action
			out = append(out, event.Spec{Kind: event.KindRuleRaised, CheckName: c.Check, IsFatal: c.Fatal, Action: &action,
				Message: c.Message, Device: c.Device, Port: c.Port, ErrorCode: []string{c.Check}, Metadata: map[string]string{"rule": c.Check}})
			continue
		}
		out = append(out, event.Spec{Kind: event.KindRuleCleared, CheckName: c.Check, IsHealthy: true, Device: c.Device, Port: c.Port,
			ErrorCode: []string{c.Check},
			Message:   fmt.Sprintf("Port %s port %d: %s no longer holds", c.Device, c.Port, c.Check),
			Metadata:  map[string]string{"rule": c.Check}})
	}
	return out
}

// runRulesLocked folds the poll into the rules' windows and returns the
// events of their changes. After a reboot or with no state, the first
// call opens each enabled rule with its check-scoped clear (DESIGN.md
// difference 5), like every other check. Caller holds d.mu.
func (d *Daemon) runRulesLocked(now time.Time) []event.Spec {
	var specs []event.Spec
	if !d.rulesStarted {
		d.rulesStarted = true
		if d.boot.Baseline() {
			eff := effectiveRules(d.cfg)
			why := "no previous state (first start, or the state file was missing or unreadable)"
			if d.boot == persist.BootRebooted {
				why = "host rebooted (boot ID changed)"
			}
			for _, r := range []struct {
				on    bool
				check string
			}{{eff.Flap.Enabled, rules.FlapCheck}, {eff.Drop.Enabled, rules.DropCheck},
				{eff.Degradation.Enabled, rules.DegradationCheck}} {
				if r.on {
					specs = append(specs, checks.ClearedSpec(r.check, why))
				}
			}
		}
	}
	d.rulePorts = d.mon.ruleReadings(d.rulePorts, d.model)
	changes := d.rules.Cycle(now, d.rulePorts, degradedOf(d.model.Conditions()))
	return append(specs, ruleSpecs(changes)...)
}

// migrateRuleChecks moves the rule conditions a state file of an older
// build holds under the rules' former check names to their new names, as
// events emitted with the first cycle: a check-scoped clear of each former
// name (so a consumer that keys conditions by check name, NVSentinel's
// node conditions, drops them there), then the same condition raised under
// the new name. Nothing else would ever clear them.
func migrateRuleChecks(model *health.Model) []event.Spec {
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
		action := c.Action
		raises = append(raises, event.Spec{Kind: event.KindRuleRaised, CheckName: nw, IsFatal: c.Severity == health.Fatal, Action: &action,
			Message: c.Message, Device: c.Entity.Device, Port: c.Entity.Port, ErrorCode: []string{nw}, Metadata: map[string]string{"rule": nw}})
	}
	return append(clears, raises...)
}
