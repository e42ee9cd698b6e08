package runner

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/reader"
)

// One signal's bug cannot blind the node (DESIGN.md section 10). Every
// step of a check (building its part of the read plan, reading for it,
// judging what was read, a driver call on the reader's worker) runs inside
// guard.Run, and its taking of a configuration inside guard.Configure: a panic there is recovered at that boundary, the check it was
// working for is disabled until the next reload or restart, one
// check-failed condition names it (the node is not healthy, /healthz
// answers 503), the panic's first frames are logged once, and every other
// check keeps polling. A panic anywhere else in the poll loop still ends
// the process, and systemd restarts it: a loop that cannot be trusted must
// not go on.

// PanicFrames bounds how much of a panic's stack is logged: enough to
// find the bug, not a page of runtime frames per failure.
const PanicFrames = 12

// guard is the boundary state: which checks are disabled, which
// check-failed conditions are still raised, and which check the running
// step works for. It implements observe.Boundary.
type guard struct {
	log *slog.Logger
	// hook is a test's seam (Seams.Step), called by Enter inside the
	// boundary; nil in production.
	hook func(check, step string)
	// failed are the checks disabled until the next reload or restart.
	failed map[string]string // check -> the step that panicked
	// raised are the checks whose check-failed condition is active: this
	// run's, or restored from the state file after a restart. Each is
	// cleared (check-resumed) when its check next completes a step.
	raised map[string]bool
	// step and running are the guarded step and the check it works for
	// now (Enter): a panic is blamed on running, or on every check the
	// step serves when it was not narrowed down.
	step    string
	running string
	// replan asks for the read plan to be built again after this cycle,
	// so a disabled check's reads stop too.
	replan bool
	// out is where the events of failures and resumptions go: the
	// running cycle's, or those the next cycle emits first.
	out *[]event.Spec
}

func newGuard(log *slog.Logger, hook func(check, step string), out *[]event.Spec) *guard {
	return &guard{log: log, hook: hook, failed: map[string]string{}, raised: map[string]bool{}, out: out}
}

// Failed reports whether check is disabled. Free when nothing failed.
func (g *guard) Failed(check string) bool {
	if len(g.failed) == 0 {
		return false
	}
	_, ok := g.failed[check]
	return ok
}

func (g *guard) allFailed(checks []string) bool {
	if len(g.failed) == 0 {
		return false
	}
	for _, c := range checks {
		if !g.Failed(c) {
			return false
		}
	}
	return true
}

// Enter says which check the step works for now (a port's link layer
// picks it): a panic from here on is that check's alone.
func (g *guard) Enter(check string) {
	g.running = check
	if g.hook != nil {
		g.hook(check, g.step)
	}
}

// Run runs step, which serves the given checks, inside the boundary. The
// events of check-failed and check-resumed conditions go to g.out. A step
// whose checks are all disabled does not run. Steps nest (a rediscovery
// inside the presence step builds the plan): the inner one settles its
// own panics and hands the outer one back its blame.
func (g *guard) Run(step string, serves []string, fn func()) {
	if g.allFailed(serves) {
		return
	}
	outerStep, outerRunning := g.step, g.running
	g.step, g.running = step, ""
	defer func() {
		r := recover()
		blame := g.running
		g.step, g.running = outerStep, outerRunning
		g.settle(step, blame, serves, r)
	}()
	if g.hook != nil {
		g.hook("", step) // a step not narrowed to one check (rules, cards)
	}
	fn()
}

// Configure runs a check's taking of a configuration inside the boundary.
// A panic disables every check it serves (a configuration is not narrowed
// to one link layer). A clean run clears nothing: taking a configuration
// proves nothing about the step that failed, which clears its condition
// when it completes again.
func (g *guard) Configure(serves []string, fn func()) {
	outerStep, outerRunning := g.step, g.running
	g.step, g.running = "configure", ""
	defer func() {
		r := recover()
		g.step, g.running = outerStep, outerRunning
		if r != nil {
			g.fail("configure", "", serves, fmt.Sprint(r), debug.Stack())
		}
	}()
	if g.hook != nil {
		for _, c := range serves {
			g.hook(c, "configure")
		}
	}
	fn()
}

// settle ends a guarded step: a clean one clears the raised conditions of
// the checks it served; a panicking one disables the check it blamed.
func (g *guard) settle(step, blame string, serves []string, r any) {
	if r == nil {
		if len(g.raised) > 0 {
			for _, c := range serves {
				if g.raised[c] && !g.Failed(c) {
					*g.out = append(*g.out, g.resumedSpec(c, "it completed its "+step+" step again"))
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
	g.fail(step, blame, serves, value, stack)
}

// fail disables the blamed check (or every check the step serves when
// the step had not narrowed it down), logging the panic once.
func (g *guard) fail(step, blame string, serves []string, value string, stack []byte) {
	blamed := serves
	if blame != "" {
		blamed = []string{blame}
	}
	for _, c := range blamed {
		if g.Failed(c) {
			continue
		}
		g.failed[c] = step
		g.raised[c] = true
		g.replan = true
		g.log.Error("check failed: a panic in its code disabled it until the next reload or restart; the other checks keep polling",
			"check", c, "step", step, "panic", value, "stack", FirstFrames(stack, PanicFrames),
			"fix", "report the stack upstream; systemctl reload nichealthd runs the check again")
		*g.out = append(*g.out, FailedSpec(c, step, value))
	}
}

// takeReplan reports whether a check failed since the last call.
func (g *guard) takeReplan() bool {
	r := g.replan
	g.replan = false
	return r
}

// FailedSpec raises check-failed for check: not healthy, no port at
// fault, no remediation of the node (the bug is the daemon's).
func FailedSpec(check, step, value string) event.Spec {
	return event.Spec{
		Kind: event.KindCheckFailed, CheckName: check, Check: check, ErrorCode: []string{string(event.KindCheckFailed)},
		Message: fmt.Sprintf("%s failed: a bug in its %s step (panic: %s) disabled it until the next reload or restart; "+
			"the rest of the node stays monitored, but what this check watches is not watched meanwhile. "+
			"Report the stack in the journal (journalctl -u nichealthd CHECK_NAME=%s) and run systemctl reload nichealthd",
			check, step, OneLineValue(value), check),
		Metadata:  map[string]string{"check": check, "step": step, "panic": OneLineValue(value)},
		Condition: condition.OfCheck(check),
	}
}

// resumedSpec clears check's check-failed condition.
func (g *guard) resumedSpec(check, why string) event.Spec {
	delete(g.raised, check)
	g.log.Info("failed check runs again", "check", check, "reason", why)
	return event.Spec{
		Kind: event.KindCheckResumed, CheckName: check, Check: check, IsHealthy: true,
		ErrorCode: []string{string(event.KindCheckFailed)},
		Message:   fmt.Sprintf("%s runs again: %s", check, why),
		Metadata:  map[string]string{"check": check},
		Condition: condition.OfCheck(check),
	}
}

// reset re-enables every disabled check (a reload): each gets another
// chance, and its condition clears when it completes a step.
func (g *guard) reset() { clear(g.failed) }

// restore marks checks whose check-failed condition the restored health
// model still holds (a restart): they clear when they run again.
func (g *guard) restore(checks []string) {
	for _, c := range checks {
		g.raised[c] = true
	}
}

// raisedWith lists the raised checks whose name starts with prefix.
func (g *guard) raisedWith(prefix string) []string {
	var out []string
	for c := range g.raised {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// FirstFrames keeps the first n frames of a stack below the panic (the
// frames above it are the recovery's own), each as "function file:line",
// joined by " | " so the journal keeps them as one field.
func FirstFrames(stack []byte, n int) string {
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

// OneLineValue is a panic's value on one line, cut to 200 bytes.
func OneLineValue(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
