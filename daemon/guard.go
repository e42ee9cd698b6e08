package daemon

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nichealth/nichealthd/checks/runner"
	"github.com/nichealth/nichealthd/daemon/delivery"
	"github.com/nichealth/nichealthd/event"
)

// A sink is guarded like a check (checks/runner's boundary): a panic in
// its own code (encoding an event) stops its drainer until the next reload
// or restart, raises check-failed under the sink's name, and the other
// sinks and every check keep going; its events wait in the outbox.

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
func (d *Daemon) sinkPanicked(name string, p *delivery.Panic) {
	value := runner.OneLineValue(fmt.Sprint(p.Value))
	d.log.Error("sink failed: a panic in its code stopped its delivery until the next reload or restart; its events stay queued in the outbox",
		"sink", name, "panic", value, "stack", runner.FirstFrames(p.Stack, runner.PanicFrames),
		"fix", "report the stack upstream; systemctl reload nichealthd restarts the sink")
	d.sinkFail.mu.Lock()
	defer d.sinkFail.mu.Unlock()
	if d.sinkFail.failed == nil {
		d.sinkFail.failed = map[string]bool{}
	}
	d.sinkFail.failed[name] = true
	d.sinkFail.pending = append(d.sinkFail.pending, runner.FailedSpec(sinkCheck(name), "deliver", value))
}

// takeSinkFailuresLocked returns the sink failures to raise with this
// poll. Caller holds d.mu.
func (d *Daemon) takeSinkFailuresLocked() []event.Spec {
	d.sinkFail.mu.Lock()
	defer d.sinkFail.mu.Unlock()
	out := d.sinkFail.pending
	d.sinkFail.pending = nil
	for _, s := range out {
		d.run.MarkFailed(s.Check)
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
	d.run.Resumed("sink:", func(c string) string {
		if slices.Contains(running, strings.TrimPrefix(c, "sink:")) {
			return why
		}
		return "the sink is no longer configured"
	})
}
