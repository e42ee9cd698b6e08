package rules

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/config"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Section is the rules' section of the state file.
const Section = "rules"

// PHYLinkDownEvents is the counter row the flap and drop rules take as a
// link-down witness beside link_downed: 64-bit, so a link_downed saturated
// at 255 (checks/counters/saturation.go) no longer hides new link downs
// on a RoCE port.
const PHYLinkDownEvents = "link_down_events_phy"

// Conditions is what the rules read of the health model: whether a
// condition is active, and every active condition (in the model's order,
// worst first).
type Conditions interface {
	Has(k condition.Key) bool
	Each(f func(k condition.Key, kind event.Kind, fatal bool, since time.Time))
}

// Check runs the rules on the node after each cycle's events are in the
// health model (step "rules"): they read what the poll observed and the
// model's conditions, and their raises and clears are events like any
// check's, folded into the same model.
type Check struct {
	cfg     config.Rules
	on      map[string]bool
	boot    observe.Boot
	bootID  string
	conds   Conditions
	engine  *Engine
	started bool
	ports   []Port
}

// NewCheck returns the rules over conds for a process that started with
// boot on bootID; windows of another boot are dropped.
func NewCheck(boot observe.Boot, bootID string, conds Conditions) *Check {
	return &Check{boot: boot, bootID: bootID, conds: conds}
}

// SetConditions gives the rules the health model to read.
func (c *Check) SetConditions(conds Conditions) { c.conds = conds }

// Configure applies [rules], with the rules that --checks (or the checks
// key) leaves out switched off, and returns the clears of the rules it
// switched off.
func (c *Check) Configure(cfg config.Rules, checksOn map[string]bool) []event.Spec {
	c.cfg, c.on = effective(cfg, checksOn), checksOn
	if c.engine == nil {
		c.engine = New(c.cfg, State{}, c.bootID)
		return nil
	}
	return Specs(c.engine.SetConfig(c.cfg))
}

// effective is the [rules] configuration with the rules that --checks
// (or the checks key) leaves out switched off.
func effective(r config.Rules, on map[string]bool) config.Rules {
	r.Flap.Enabled = r.Flap.Enabled && on[event.FlapCheck]
	r.Drop.Enabled = r.Drop.Enabled && on[event.DropCheck]
	r.Degradation.Enabled = r.Degradation.Enabled && on[event.DegradationCheck]
	return r
}

// Engine is the rules' engine (the views read its episodes).
func (c *Check) Engine() *Engine { return c.engine }

func (*Check) Step() string { return "rules" }

func (*Check) Serves() []string {
	return []string{event.FlapCheck, event.DropCheck, event.DegradationCheck}
}

// Run folds the poll into the rules' windows. After a reboot or with no
// state, the first run opens each enabled rule with its check-scoped
// clear (DESIGN.md difference 5), like every other check.
func (c *Check) Run(cy *checks.Cycle) {
	if !c.started {
		c.started = true
		if c.boot.Baseline() {
			why := "no previous state (first start, or the state file was missing or unreadable)"
			if c.boot == observe.BootRebooted {
				why = "host rebooted (boot ID changed)"
			}
			for _, r := range []struct {
				on    bool
				check string
			}{{c.cfg.Flap.Enabled, event.FlapCheck}, {c.cfg.Drop.Enabled, event.DropCheck}, {c.cfg.Degradation.Enabled, event.DegradationCheck}} {
				if r.on {
					cy.Emit(checks.ClearedSpec(r.check, why))
				}
			}
		}
	}
	c.ports = c.readings(cy.Obs, c.ports[:0])
	cy.Emit(Specs(c.engine.Cycle(cy.Obs.Now, c.ports, c.degraded()))...)
}

// Readings is what the rules read of an observation's ports.
func (c *Check) Readings(obs *observe.Observation) []Port { return c.readings(obs, nil) }

// readings is what the rules need of each monitored port: its state and
// its link-down witnesses. A port that is DOWN without a condition of the
// state check (unprovisioned on first sight, DESIGN.md difference 4) is
// passed as unknown: an uncabled port has not dropped.
func (c *Check) readings(obs *observe.Observation, buf []Port) []Port {
	buf = buf[:0]
	for _, p := range obs.Ports {
		rp := Port{Device: p.Device.Name, Port: p.Port.Num}
		if p.Observed {
			rp.Link = p.Link
			if rp.Link.Down() && !c.conds.Has(condition.Key{Check: event.StateCheckFor(p.Port.LinkLayer), Entity: condition.OfPort(rp.Device, rp.Port)}) {
				rp.Link = sysfs.Link{}
			}
		}
		for si := range p.Samples {
			s := &p.Samples[si]
			for _, row := range s.Rows {
				if row >= len(obs.Counters) {
					continue
				}
				var dst *Reading
				switch obs.Counters[row].Name {
				case "link_downed":
					dst = &rp.LinkDowned
				case PHYLinkDownEvents:
					dst = &rp.LinkDownEvents
				default:
					continue
				}
				if s.Err == nil {
					*dst = Reading{Value: s.Value, OK: true}
				}
			}
		}
		buf = append(buf, rp)
	}
	return buf
}

// degraded lists the conditions RepeatedNICDegradation counts: the
// non-fatal degradation events of a port itself, its state (INIT, ARMED,
// Polling, LinkErrorRecovery, a RoCE netdev down) and its counters'
// breaches (DESIGN.md difference 15). Monitoring conditions are not the
// port degrading: a parked file or a hung read is the driver refusing a
// query, a sanity finding or a PCIe AER condition is about the slot or the
// path, a saturated counter is lost visibility and congestion is the
// fabric's.
func (c *Check) degraded() []Degraded {
	var out []Degraded
	c.conds.Each(func(k condition.Key, kind event.Kind, fatal bool, since time.Time) {
		if fatal || k.Entity.Device == "" || k.Entity.Port == 0 || isRuleCheck(k.Check) {
			return
		}
		if kind != event.KindPortNonFatal && kind != event.KindCounterBreach {
			return
		}
		out = append(out, Degraded{Key: k.Check + "|" + k.Entity.String(), Device: k.Entity.Device, Port: k.Entity.Port, Since: since})
	})
	return out
}

func isRuleCheck(name string) bool {
	return name == event.FlapCheck || name == event.DropCheck || name == event.DegradationCheck
}

// Specs turns the rules' changes into events.
func Specs(changes []Change) []event.Spec {
	out := make([]event.Spec, 0, len(changes))
	for _, ch := range changes {
		c := ch.Condition
		if ch.Raise {
			out = append(out, RaiseSpec(c))
			continue
		}
		msg := c.Message
		if msg == "" {
			msg = fmt.Sprintf("Port %s port %d: %s no longer holds", c.Device, c.Port, c.Check)
		}
		out = append(out, event.Spec{Kind: event.KindRuleCleared, CheckName: c.Check, IsHealthy: true, Device: c.Device, Port: c.Port,
			ErrorCode: []string{c.Check},
			Message:   msg,
			Metadata:  map[string]string{"rule": c.Check},
			Condition: condition.OfPort(c.Device, c.Port)})
	}
	return out
}

// RaiseSpec is the event that raises a rule's condition.
func RaiseSpec(c Condition) event.Spec {
	action := c.Action
	return event.Spec{Kind: event.KindRuleRaised, CheckName: c.Check, IsFatal: c.Fatal, Action: &action,
		Message: c.Message, Device: c.Device, Port: c.Port, ErrorCode: []string{c.Check}, Metadata: map[string]string{"rule": c.Check},
		Condition: condition.OfPort(c.Device, c.Port)}
}

// Episodes is the number of link-down episodes of a port since the rules
// first saw it in this boot (see Engine.Episodes).
func (c *Check) Episodes(device string, port int) (uint64, bool) {
	return c.engine.Episodes(device, port)
}

// Section is the rules' section of the state file.
func (c *Check) Section() string { return Section }

// Restore resumes the rules' windows from the state file: windows of
// another boot are dropped by the engine itself, so they clear on reboot.
func (c *Check) Restore(raw []byte) []string {
	var rs State
	var dropped []string
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &rs); err != nil {
			dropped = []string{fmt.Sprintf("checks[%q]: unreadable (%v); the rules' windows start fresh", Section, err)}
			rs = State{}
		}
	}
	c.engine = New(c.cfg, rs, c.bootID)
	return dropped
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.engine.State()) }

// Replay does nothing: the rules count what the model holds, which the
// replay restores.
func (c *Check) Replay(*event.Event) {}
