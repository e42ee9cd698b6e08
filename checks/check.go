package checks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
)

// Check is one check's contract with the runner (checks/runner): it takes
// each cycle's observation, keeps its own memory, and says what changed
// through the Cycle: the condition changes it raises and clears (each
// event naming its condition's key) and whether its memory moved. It owns
// its raise and its clear. A check with memory in the state file also
// implements Memory.
type Check interface {
	// Step is the check's step in the panic boundary ("judge", "cards",
	// "counters", ...), and Serves the check names it speaks as: its
	// events' CheckName and the checks a panic in its step disables
	// unless Cycle.Enter narrowed it to one.
	Step() string
	Serves() []string
	// Run judges one observation.
	Run(c *Cycle)
}

// Memory is a check's part of the state file: one versioned section that
// it restores (validating what it reads back), marshals, and replays
// events onto (the outbox is written before the state, so after a crash
// the state may lack what was already said).
type Memory interface {
	// Section is the name of the check's section in the state file.
	Section() string
	// Restore starts the check's memory from raw (nil: none saved) and
	// lists what it dropped as invalid; a section it cannot read at all
	// starts it fresh and is listed too.
	Restore(raw []byte) (dropped []string)
	// Marshal is the section to save.
	Marshal() ([]byte, error)
	// Replay applies one of the check's own events to its memory; events
	// of other checks are ignored.
	Replay(e *event.Event)
}

// Cycle is one run of the checks over an observation: what they read and
// where their changes go, in order.
type Cycle struct {
	Obs *observe.Observation
	b   observe.Boundary
	out *[]event.Spec
	// changed: some check's memory moved; view: something the published
	// verdict shows moved.
	changed, view bool
}

// NewCycle is a cycle whose checks run inside b. The runner keeps one and
// Resets it for every cycle (a steady cycle allocates nothing).
func NewCycle(b observe.Boundary) *Cycle { return &Cycle{b: b} }

// Reset starts the cycle over obs, its events appended to out.
func (c *Cycle) Reset(obs *observe.Observation, out *[]event.Spec) {
	c.Obs, c.out, c.changed, c.view = obs, out, false, false
}

// Emit adds condition changes to the cycle's events.
func (c *Cycle) Emit(specs ...event.Spec) { *c.out = append(*c.out, specs...) }

// Mark is where the check's next event goes in the cycle's events, for
// Rewrite.
func (c *Cycle) Mark() int { return len(*c.out) }

// Rewrite replaces the events emitted since mark with what f makes of
// them (f gets every event of the cycle and mark, and returns them all).
func (c *Cycle) Rewrite(mark int, f func(specs []event.Spec, from int) []event.Spec) {
	*c.out = f(*c.out, mark)
}

// Changed says the check's memory moved: the state is saved.
func (c *Cycle) Changed() { c.changed = true }

// ViewChanged says something the published verdict shows moved without
// an event (a counter's rate, an AER total).
func (c *Cycle) ViewChanged() { c.view = true }

// Enter narrows the running step to one of its checks: a panic from here
// on disables that check alone.
func (c *Cycle) Enter(check string) { c.b.Enter(check) }

// Failed reports whether a check is disabled by a panic.
func (c *Cycle) Failed(check string) bool { return c.b.Failed(check) }

// HasChanged and HasViewChanged are what the runner reads back.
func (c *Cycle) HasChanged() bool     { return c.changed }
func (c *Cycle) HasViewChanged() bool { return c.view }

// Restated is a condition a check's memory implies and since when: what a
// state file written before the health model held, said again as events
// so that the model starts where the checks are.
type Restated struct {
	Spec  event.Spec
	Since time.Time
}

// RestoreSection reads a versioned JSON section into mem (cleared by
// fresh first) and validates it: the common part of every Memory.Restore.
// A section written by a newer version of its check, or unreadable,
// starts the check fresh and says so.
func RestoreSection(name string, raw []byte, version int, mem any, fresh func(), validate func() []string) []string {
	fresh()
	if len(raw) == 0 {
		return nil
	}
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return []string{fmt.Sprintf("checks[%q]: unreadable (%v); that check starts fresh", name, err)}
	}
	if probe.Version > version {
		return []string{fmt.Sprintf("checks[%q]: version %d is newer than this build's %d; that check starts fresh", name, probe.Version, version)}
	}
	if err := json.Unmarshal(raw, mem); err != nil {
		fresh()
		return []string{fmt.Sprintf("checks[%q]: unreadable (%v); that check starts fresh", name, err)}
	}
	return validate()
}

// ClearedSpec is the check-scoped healthy event with no entities that opens
// a new boot (DESIGN.md difference 5): it clears everything the check said
// before, because the node may have come back with different hardware.
func ClearedSpec(checkName, why string) event.Spec {
	return event.Spec{
		Kind: event.KindCheckCleared, CheckName: checkName, IsHealthy: true,
		Message:   fmt.Sprintf("%s: %s; all previous conditions of this check are cleared", checkName, why),
		Condition: condition.OfNode(""),
	}
}

// LostAfter is how many consecutive complete enumerations of
// class/infiniband must miss a monitored NIC before its loss is a
// condition (DESIGN.md difference 3): a driver or devlink reload takes its
// RDMA device away for a second or two, and is not a failure. The port
// check counts it for a NIC gone from the bus, the PCI inventory for a
// function that stays on the bus without its RDMA device (difference 18);
// one number, so the two never disagree on when a loss is one.
const LostAfter = 3
