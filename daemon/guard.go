package daemon

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/topology/reader"
)

// One signal's bug cannot blind the node (DESIGN.md section 10). Every
// step of a check (building its part of the read plan, judging what was
// read, a driver call on the reader's worker) runs inside checkGuard.run:
// a panic there is recovered at that boundary, the check it was working
// for is disabled until the next reload or restart, one check-failed
// condition names it (the node is not healthy, /healthz answers 503), the
// panic's first frames are logged once, and every other check keeps
// polling. A panic anywhere else in the poll loop still ends the process,
// and systemd restarts it: a loop that cannot be trusted must not go on.

// The daemon's checks as the guard names them: the event check names, and
// for the signals whose events share the degradation checks' names, their
// own (a bug in the AER reader must not stop the counters).
const (
	aerCheck       = "PCIeAERCheck"
	sanityCheck    = "LinkSanityCheck"
	inventoryCheck = "NICInventoryCheck"
)

var (
	stateChecks       = []string{event.InfiniBandStateCheck, event.EthernetStateCheck}
	degradationChecks = []string{event.InfiniBandDegradationCheck, event.EthernetDegradationCheck}
	aerChecks         = []string{aerCheck}
	sanityChecks      = []string{sanityCheck}
	inventoryChecks   = []string{inventoryCheck}
	ruleChecks        = []string{rules.FlapCheck, rules.DropCheck, rules.DegradationCheck}
)

// panicFrames bounds how much of a panic's stack is logged: enough to
// find the bug, not a page of runtime frames per failure.
const panicFrames = 12

// checkGuard is the boundary state: which checks are disabled, which
// check-failed conditions are still raised, and which check the running
// step works for.
type checkGuard struct {
	log *slog.Logger
	// hook is a test's seam (Seams.Step), called by enter inside the
	// boundary; nil in production.
	hook func(check, step string)
	// failed are the checks disabled until the next reload or restart.
	failed map[string]string // check -> the step that panicked
	// raised are the checks whose check-failed condition is active: this
	// run's, or restored from the state file after a restart. Each is
	// cleared (check-resumed) when its check next completes a step.
	raised map[string]bool
	// step and running are the guarded step and the check it works for
	// now (enter): a panic is blamed on running, or on every check the
	// step serves when it was not narrowed down.
	step    string
	running string
	// replan asks the monitor to rebuild the read plan after this cycle,
	// so a disabled check's reads stop too.
	replan bool
}

func newCheckGuard(log *slog.Logger, hook func(check, step string)) *checkGuard {
	return &checkGuard{log: log, hook: hook, failed: map[string]string{}, raised: map[string]bool{}}
}

// isFailed reports whether check is disabled. Free when nothing failed.
func (g *checkGuard) isFailed(check string) bool {
	if len(g.failed) == 0 {
		return false
	}
	_, ok := g.failed[check]
	return ok
}

func (g *checkGuard) allFailed(checks []string) bool {
	if len(g.failed) == 0 {
		return false
	}
	for _, c := range checks {
		if !g.isFailed(c) {
			return false
		}
	}
	return true
}

// enter says which check the step works for now (a port's link layer
// picks it): a panic from here on is that check's alone.
func (g *checkGuard) enter(check string) {
	g.running = check
	if g.hook != nil {
		g.hook(check, g.step)
	}
}

// run runs step, which serves the given checks, inside the boundary.
// Specs of check-failed and check-resumed conditions are appended to
// specs. A step whose checks are all disabled does not run. Steps nest (a
// rediscovery inside the presence step builds the plan): the inner one
// settles its own panics and hands the outer one back its blame.
func (g *checkGuard) run(step string, serves []string, specs *[]event.Spec, fn func()) {
	if g.allFailed(serves) {
		return
	}
	outerStep, outerRunning := g.step, g.running
	g.step, g.running = step, ""
	defer func() {
		r := recover()
		blame := g.running
		g.step, g.running = outerStep, outerRunning
		g.settle(step, blame, serves, specs, r)
	}()
	if g.hook != nil {
		g.hook("", step) // a step not narrowed to one check (rules, cards)
	}
	fn()
}

// settle ends a guarded step: a clean one clears the raised conditions of
// the checks it served; a panicking one disables the check it blamed.
func (g *checkGuard) settle(step, blame string, serves []string, specs *[]event.Spec, r any) {
	if r == nil {
		if len(g.raised) > 0 {
			for _, c := range serves {
				if g.raised[c] && !g.isFailed(c) {
					*specs = append(*specs, g.resumedSpec(c, "it completed its "+step+" step again"))
				}
			}
		}
		return
	}
	value, stack := fmt.Sprint(r), debug.Stack()
	if pe, ok := r.(*reader.PanicError); ok {
		// Raised on the reader's worker (a driver call): its own stack.
		value, stack = fmt.Sprintf("%v (in %s)", pe.Value, pe.Name), pe.Stack
	}
	g.fail(step, blame, serves, value, stack, specs)
}

// fail disables the blamed check (or every check the step serves when
// the step had not narrowed it down), logging the panic once.
func (g *checkGuard) fail(step, blame string, serves []string, value string, stack []byte, specs *[]event.Spec) {
	blamed := serves
	if blame != "" {
		blamed = []string{blame}
	}
	for _, c := range blamed {
		if g.isFailed(c) {
			continue
		}
		g.failed[c] = step
		g.raised[c] = true
		g.replan = true
		g.log.Error("check failed: a panic in its code disabled it until the next reload or restart; the other checks keep polling",
			"check", c, "step", step, "panic", value, "stack", firstFrames(stack, panicFrames),
			"fix", "report the stack upstream; systemctl reload nichealthd runs the check again")
		*specs = append(*specs, failedSpec(c, step, value))
	}
}

// failedSpec raises check-failed for check: not healthy, no port at
// fault, no remediation of the node (the bug is the daemon's).
func failedSpec(check, step, value string) event.Spec {
	return event.Spec{
		Kind: event.KindCheckFailed, CheckName: check, Check: check, ErrorCode: []string{string(event.KindCheckFailed)},
		Message: fmt.Sprintf("%s failed: a bug in its %s step (panic: %s) disabled it until the next reload or restart; "+
			"the rest of the node stays monitored, but what this check watches is not watched meanwhile. "+
			"Report the stack in the journal (journalctl -u nichealthd CHECK_NAME=%s) and run systemctl reload nichealthd",
			check, step, oneLineValue(value), check),
		Metadata: map[string]string{"check": check, "step": step, "panic": oneLineValue(value)},
	}
}

// resumedSpec clears check's check-failed condition.
func (g *checkGuard) resumedSpec(check, why string) event.Spec {
	delete(g.raised, check)
	g.log.Info("failed check runs again", "check", check, "reason", why)
	return event.Spec{
		Kind: event.KindCheckResumed, CheckName: check, Check: check, IsHealthy: true,
		ErrorCode: []string{string(event.KindCheckFailed)},
		Message:   fmt.Sprintf("%s runs again: %s", check, why),
		Metadata:  map[string]string{"check": check},
	}
}

// reset re-enables every disabled check (a reload): each gets another
// chance, and its condition clears when it completes a step.
func (g *checkGuard) reset() {
	clear(g.failed)
}

// restore marks checks whose check-failed condition the restored health
// model still holds (a restart): they clear when they run again.
func (g *checkGuard) restore(checks []string) {
	for _, c := range checks {
		g.raised[c] = true
	}
}

// firstFrames keeps the first n frames of a stack below the panic (the
// frames above it are the recovery's own), each as "function file:line",
// joined by " | " so the journal keeps them as one field.
func firstFrames(stack []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(stack)), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "goroutine ") {
		lines = lines[1:]
	}
	for i := 0; i+1 < len(lines); i += 2 {
		if strings.HasPrefix(lines[i], "panic(") {
			lines = lines[i+2:]
			break
		}
	}
	var out []string
	for i := 0; i+1 < len(lines) && len(out) < n; i += 2 {
		out = append(out, strings.TrimSpace(lines[i])+" "+strings.TrimSpace(lines[i+1]))
	}
	return strings.Join(out, " | ")
}

func oneLineValue(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// A sink is guarded like a check: a panic in its own code (encoding an
// event) stops its drainer until the next reload or restart, raises
// check-failed under the sink's name, and the other sinks and every check
// keep going; its events wait in the outbox.

// sinkCheck is the name a sink's check-failed condition carries.
func sinkCheck(name string) string { return "sink:" + name }

// sinkFailures carries failures from the drainers' goroutines to the poll
// loop, which raises their conditions.
type sinkFailures struct {
	mu      sync.Mutex
	pending []event.Spec
	failed  map[string]bool // sinks stopped by a panic
}

// sinkPanicked is the drainers' report of a panic in sink name.
func (d *Daemon) sinkPanicked(name string, p *sinkPanic) {
	value := oneLineValue(fmt.Sprint(p.value))
	d.log.Error("sink failed: a panic in its code stopped its delivery until the next reload or restart; its events stay queued in the outbox",
		"sink", name, "panic", value, "stack", firstFrames(p.stack, panicFrames),
		"fix", "report the stack upstream; systemctl reload nichealthd restarts the sink")
	d.sinkFail.mu.Lock()
	defer d.sinkFail.mu.Unlock()
	if d.sinkFail.failed == nil {
		d.sinkFail.failed = map[string]bool{}
	}
	d.sinkFail.failed[name] = true
	d.sinkFail.pending = append(d.sinkFail.pending, failedSpec(sinkCheck(name), "deliver", value))
}

// takeSinkFailuresLocked returns the sink failures to raise with this
// poll. Caller holds d.mu.
func (d *Daemon) takeSinkFailuresLocked() []event.Spec {
	d.sinkFail.mu.Lock()
	defer d.sinkFail.mu.Unlock()
	out := d.sinkFail.pending
	d.sinkFail.pending = nil
	for _, s := range out {
		d.mon.guard.raised[s.Check] = true
	}
	return out
}

// anySinkFailed reports whether a sink is stopped by a panic.
func (d *Daemon) anySinkFailed() bool {
	d.sinkFail.mu.Lock()
	defer d.sinkFail.mu.Unlock()
	return len(d.sinkFail.failed) > 0
}

// sinksRestartedLocked clears the failures of the sinks just started (a
// reload, or the start after a restart that restored their conditions):
// each failed sink runs again, or is no longer configured. The clears go
// out with the next poll. Caller holds d.mu.
func (d *Daemon) sinksRestartedLocked(running []string, why string) {
	d.sinkFail.mu.Lock()
	clear(d.sinkFail.failed)
	d.sinkFail.mu.Unlock()
	g := d.mon.guard
	names := make([]string, 0, len(g.raised))
	for c := range g.raised {
		if strings.HasPrefix(c, "sink:") {
			names = append(names, c)
		}
	}
	sort.Strings(names)
	for _, c := range names {
		reason := "the sink is no longer configured"
		if slices.Contains(running, strings.TrimPrefix(c, "sink:")) {
			reason = why
		}
		d.mon.pendingSpecs = append(d.mon.pendingSpecs, g.resumedSpec(c, reason))
	}
}

// failedChecksOf lists the checks of the model's check-failed conditions.
func failedChecksOf(conds []health.Condition) []string {
	var out []string
	for _, c := range conds {
		if c.Entity.Kind == health.EntityCheck {
			out = append(out, c.Entity.Name)
		}
	}
	return out
}
