package daemon

import (
	"github.com/nichealth/nichealthd/checks/runner"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/reader"
)

// Seams are stand-ins for the kernel that a test passes at construction
// (Options.Seams). The production binary passes none, so every read it
// makes is the real host's and no code path depends on whether the host
// looks simulated (DESIGN.md section 10). nichealthd built with the
// simulate tag fills them from a simulated host for the black-box tests
// that inject errnos or PHY statistics; every other black-box test runs
// the production binary.
type Seams struct {
	// ReadFaults replaces the outcome of chosen reads with an errno
	// (parked-file tests; topology/sim.ErrnoTable).
	ReadFaults reader.Faults
	// OpenStats opens a netdev's driver statistics instead of the
	// SIOCETHTOOL ioctl (topology/sim.PHYStatsOpener). It must return a
	// plain nil Source with every error, as ethtool.OpenSource does.
	OpenStats func(netdev string, want []string) (ethtool.Source, error)
	// LinkStates answers the link-down reason instead of ethtool netlink
	// (topology/sim.LinkStates).
	LinkStates observe.LinkStates
	// Modules and Devlink read transceivers and devlink instead of
	// netlink (topology/sim.Modules, topology/sim.Devlink).
	Modules observe.Modules
	Devlink observe.Devlink
	// Step is called inside a check's boundary each time a step starts
	// working for a check (per port for the state and counter checks),
	// with the check and the step ("plan", "observe", "judge", "counters",
	// "pcie-aer", "link-sanity", "rules", ...): a test panics from it to
	// prove the boundary holds (checks/runner).
	Step func(check, step string)
}

func (s Seams) runner() runner.Seams {
	return runner.Seams{ReadFaults: s.ReadFaults, OpenStats: s.OpenStats, LinkStates: s.LinkStates, Modules: s.Modules, Devlink: s.Devlink, Step: s.Step}
}
