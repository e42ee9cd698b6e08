package runner

import (
	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/cable"
	"github.com/nichealth/nichealthd/checks/cards"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/farend"
	"github.com/nichealth/nichealthd/checks/inventory"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/checks/ports"
	"github.com/nichealth/nichealthd/checks/readfaults"
	"github.com/nichealth/nichealthd/checks/roce"
	"github.com/nichealth/nichealthd/checks/sanity"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/reader"
)

// The configuration file (package config) as each part takes it: the
// observer and every check get their own typed part, so none of them
// reads the file's layout.

func observeConfig(c *config.Config) observe.Config {
	var rows []observe.Counter
	for _, d := range countersConfig(c).Plan() {
		rows = append(rows, observe.Counter{Name: d.Name, Path: observe.CounterPath(d.Path)})
	}
	if roceConfig(c).On {
		// After the counter table's rows, which the counter check indexes
		// from 0; the RoCE check finds its own by name.
		rows = append(rows, roce.Rows()...)
	}
	return observe.Config{
		Paths: c.Paths, Filter: c.Filter, MetadataPath: c.MetadataPath, TopologySource: c.TopologySource,
		ExclusionRaw: c.ExclusionRaw, InclusionRaw: c.InclusionRaw,
		PollInterval: c.PollInterval, ReadTimeout: c.ReadTimeout, MaxStuckReads: c.MaxStuckReads, ParkReprobe: c.ParkReprobe,
		Checks: c.Checks, Counters: rows, Sanity: c.Sanity.Enabled, AER: c.PCIeAER.Enabled, Inventory: c.Inventory.Enabled,
	}
}

func countersConfig(c *config.Config) counters.Config {
	return counters.Config{Enabled: c.CountersEnabled, Table: c.Counters, XmitWaitBytesPerTick: c.XmitWaitBytesPerTick}
}

// roceConfig is [roce]: read and judged only with the Ethernet counter
// check's reads on (the RoCE rows ride its read plan).
func roceConfig(c *config.Config) roce.Config {
	r := c.RoCE
	return roce.Config{On: r.Enabled && c.Checks[event.EthernetDegradationCheck], Thresholds: roce.Thresholds{
		Window: r.Window, CongestedPerSecond: r.CongestedPerSecond, LossyPerSecond: r.LossyPerSecond,
		RxStarvedPerSecond: r.RxStarvedPerSecond, PauseStormEvents: r.PauseStormEvents, PauseStormPercent: r.PauseStormPercent}}
}

func portsConfig(c *config.Config) ports.Config { return ports.Config{Checks: c.Checks} }

func cardsConfig(c *config.Config) cards.Config {
	return cards.Config{Checks: c.Checks, Hold: c.CardAnomalyHold}
}

func sanityConfig(c *config.Config) sanity.Config {
	s := c.Sanity
	return sanity.Config{Enabled: s.Enabled, PCIe: s.PCIe, RateVsPeers: s.RateVsPeers, SMLID: s.SMLID, CharDevices: s.CharDevices,
		ISSM: s.ISSM, RoCEGID: s.RoCEGID, Fatal: s.Fatal}
}

func aerConfig(c *config.Config) aer.Config {
	a := c.PCIeAER
	return aer.Config{Enabled: a.Enabled, Thresholds: aer.Thresholds{CorrectablePerMinute: a.CorrectablePerMinute,
		Window: a.Window, NonFatalQuiet: a.NonFatalQuiet}}
}

func inventoryConfig(c *config.Config) inventory.Config {
	v := c.Inventory
	ic := inventory.Config{Enabled: v.Enabled, FirmwareDrift: v.FirmwareDrift, ExpectedPorts: v.ExpectedPorts,
		ExpectedRateGbps: v.ExpectedRateGbps, Hold: v.Hold, LostHold: v.LostHold, Checks: c.Checks}
	if v.ExpectedPorts == config.ModelDefault {
		ic.ExpectedPorts = inventory.ModelDefault
	}
	if v.ExpectedRateGbps == config.ModelDefault {
		ic.ExpectedRateGbps = inventory.ModelDefault
	}
	return ic
}

func kernelLogConfig(c *config.Config) kernellog.Config {
	k := c.KernelLog
	return kernellog.Config{On: k.Enabled && c.Checks[kernellog.CheckName], MatchUserSpace: k.MatchUserSpace, Patterns: k.Patterns}
}

func farEndConfig(c *config.Config) farend.Config {
	return farend.Config{On: c.FarEndOn(), Rows: c.FarEnd.Rows, XmitWaitBytesPerTick: c.XmitWaitBytesPerTick}
}

// cableConfig holds a rise as errors flowing for two far-end intervals:
// the switch port's half is read once an interval, ours every tick, and
// both halves must overlap to say "both". Never less than
// cable.DefaultWindow, so a scraper reading /metrics once a minute sees a
// burst that a short [farEnd] interval reads quickly.
func cableConfig(c *config.Config) cable.Config {
	return cable.Config{Window: max(2*c.FarEnd.Interval, cable.DefaultWindow),
		Transport: cable.Transport{Timeout: c.Cable.TransportTimeout, Retries: c.Cable.TransportRetries}}
}

func readFaultsConfig(c *config.Config) readfaults.Config {
	return readfaults.Config{ReadTimeout: c.ReadTimeout, ParkReprobe: c.ParkReprobe}
}

// Seams are a test's stand-ins for the kernel and its hook into the
// boundary; the production binary passes none.
type Seams struct {
	// ReadFaults replaces the outcome of chosen reads with an errno.
	ReadFaults reader.Faults
	// OpenStats opens a netdev's driver statistics instead of the ioctl.
	OpenStats func(netdev string, want []string) (ethtool.Source, error)
	// LinkStates answers the link-down reason instead of ethtool netlink;
	// Modules and Devlink the transceivers and devlink.
	LinkStates observe.LinkStates
	Modules    observe.Modules
	Devlink    observe.Devlink
	// Step is called inside a check's boundary each time a step starts
	// working for a check (per port for the state and counter checks),
	// with the check and the step ("plan", "observe", "judge",
	// "counters", "pcie-aer", "link-sanity", "rules", ...): a test panics
	// from it to prove the boundary holds.
	Step func(check, step string)
	// KeepOpen keeps descriptors open whatever the tree is, as real sysfs
	// gets them (benchmarks of a simulated tree).
	KeepOpen bool
}

func (s Seams) observe() observe.Seams {
	return observe.Seams{ReadFaults: s.ReadFaults, OpenStats: s.OpenStats, KeepOpen: s.KeepOpen, LinkStates: s.LinkStates,
		Modules: s.Modules, Devlink: s.Devlink}
}
