package cable

import (
	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
)

// Check runs the tracker as one step of the cycle (checks.Check): it
// raises no condition, so it changes no verdict of the seeds; what it
// judges reaches the events through the runner's annotation and the
// views through the snapshot.
type Check struct{ t *Tracker }

// NewCheck returns the step over t.
func NewCheck(t *Tracker) *Check { return &Check{t: t} }

func (*Check) Step() string { return "cable" }

// Serves names the step's own boundary: a bug in the verdict disables the
// verdict alone, never the checks whose events it annotates.
func (*Check) Serves() []string { return []string{event.CableVerdictCheck} }

// Run judges every port of the cycle's observation.
func (c *Check) Run(cy *checks.Cycle) {
	cy.Enter(event.CableVerdictCheck)
	if c.t.Observe(cy.Obs) {
		cy.ViewChanged()
	}
}
