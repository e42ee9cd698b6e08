package observe

import (
	"time"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/reader"
)

// Config is what the observer reads and how: the host's paths, which
// devices and checks, the counter table's rows, the cadences and the
// reads' bounds. The daemon's configuration (package config) fills it.
type Config struct {
	Paths          topology.Paths
	Filter         topology.Filter
	MetadataPath   string
	TopologySource string
	// ExclusionRaw and InclusionRaw are the filter's text: a reload that
	// changes it rediscovers.
	ExclusionRaw, InclusionRaw string

	PollInterval  time.Duration
	ReadTimeout   time.Duration
	MaxStuckReads int
	// ParkReprobe is how often a parked file is read again.
	ParkReprobe time.Duration

	// Checks are the checks switched on (the checks key, --checks): a
	// counter check that is off reads nothing.
	Checks map[string]bool
	// Counters are the enabled rows of the counter table, in the table's
	// order; empty when counter detection is off. Samples name their rows
	// by index into it.
	Counters []Counter
	// Sanity runs the link sanity pass; AER reads the PCIe AER counters;
	// Inventory scans the PCI bus for NIC functions.
	Sanity    bool
	AER       bool
	Inventory bool
	// Unclassified is for a one-shot check: when roles cannot be
	// classified (no GPU topology), every Mellanox PF is read with an
	// unknown role instead of failing.
	Unclassified bool
}

// Counter is one enabled row of the counter table as the read plan sees
// it: its name and what it reads.
type Counter struct {
	Name string
	Path CounterPath
	// LinkLayer narrows the row to ports of one link layer ("" every
	// port its path applies to): the RoCE signals (checks/roce) are read
	// on Ethernet ports only, though some of their hw_counters files also
	// exist on InfiniBand ports.
	LinkLayer string
}

// AppliesTo reports whether the row is read on a port of the link layer.
func (c Counter) AppliesTo(linkLayer string) bool {
	return c.Path.AppliesTo(linkLayer) && (c.LinkLayer == "" || c.LinkLayer == linkLayer)
}

// Boot is what the process knows of the host's past when it starts (seed
// link-state 3.4 step 4, counter 6.5).
type Boot int

const (
	// BootFresh: no usable state (first start, a missing or unreadable
	// state file): the first poll is a baseline.
	BootFresh Boot = iota
	// BootRebooted: the state belonged to an earlier boot: the first poll
	// is a baseline.
	BootRebooted
	// BootSame: a restart within the same boot: the first poll compares
	// with what was remembered.
	BootSame
)

// Baseline reports whether the first poll follows the after-reboot rules.
func (b Boot) Baseline() bool { return b != BootSame }

// Seams are a test's stand-ins for the kernel, passed at construction; the
// production binary passes none (DESIGN.md section 10).
type Seams struct {
	// ReadFaults replaces the outcome of chosen reads with an errno
	// (parked-file tests; topology/sim.ErrnoTable).
	ReadFaults reader.Faults
	// OpenStats opens a netdev's driver statistics instead of the
	// SIOCETHTOOL ioctl (topology/sim.PHYStatsOpener). It must return a
	// plain nil Source with every error, as ethtool.OpenSource does.
	OpenStats func(netdev string, want []string) (ethtool.Source, error)
	// KeepOpen keeps descriptors open whatever the tree is, as real
	// sysfs gets them (benchmarks of a simulated tree).
	KeepOpen bool
	// LinkStates answers the link-down reason instead of ethtool netlink
	// (topology/sim.LinkStates).
	LinkStates LinkStates
	// Modules and Devlink read transceivers and devlink instead of
	// netlink (topology/sim.Modules, topology/sim.Devlink).
	Modules Modules
	Devlink Devlink
}

// openStats is how driver statistics are opened: the ioctl unless a test
// passed another opener.
func (s *Seams) openStats() func(netdev string, want []string) (ethtool.Source, error) {
	if s.OpenStats != nil {
		return s.OpenStats
	}
	return ethtool.OpenSource
}

// readerOptions is how the configuration tunes the reader: the deadline,
// the stuck bound, descriptors kept open on real sysfs only, and the
// parked files' re-probe interval.
func readerOptions(cfg *Config) reader.Options {
	return reader.Options{
		Timeout: cfg.ReadTimeout, MaxStuck: cfg.MaxStuckReads,
		KeepOpen: reader.IsSysfs(cfg.Paths.SysfsRoot),
		Reprobe:  cfg.ParkReprobe,
	}
}

// Boundary is the checks' panic boundary (checks/runner): every step that
// reads for a check runs inside it, so a panic in that code disables the
// check alone, and a disabled check's reads stop.
type Boundary interface {
	// Run runs fn, a step serving the named checks, inside the boundary;
	// a step whose checks are all disabled does not run.
	Run(step string, serves []string, fn func())
	// Enter says which check the running step works for from now on: a
	// panic is that check's alone.
	Enter(check string)
	// Failed reports whether check is disabled.
	Failed(check string) bool
}

// noBoundary runs every step and fails nothing (a monitor without checks).
type noBoundary struct{}

func (noBoundary) Run(_ string, _ []string, fn func()) { fn() }
func (noBoundary) Enter(string)                        {}
func (noBoundary) Failed(string) bool                  { return false }
