package observe

import (
	"errors"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/aerfile"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Observation is what one cycle saw, typed: the device set and its
// enumeration, every monitored port's state, rate and operstate, the
// counters sampled on a counter tick, the outcome of every read, the PCIe
// AER readings, and the cadence facts the checks act on. The observer
// builds it in place (a steady cycle allocates nothing): it is valid
// until the next Cycle, and a check copies what it keeps. Checks never
// modify it.
type Observation struct {
	// Now is the cycle's time.
	Now time.Time
	// Boot is what the process knew of the host's past when it started;
	// First says this is the process's first state poll.
	Boot  Boot
	First bool
	// StatePoll says the cycle polled port state (enumeration, state
	// files); false when it woke for the counter tick or the AER read
	// alone.
	StatePoll bool

	// Paths are where the host's files are.
	Paths topology.Paths
	// Devices are every device of the last discovery (VFs and management
	// NICs included, as discovery saw them); DevicesChanged says the set
	// changed since the last state poll (discovery ran).
	Devices        []*topology.Device
	DevicesChanged bool
	// Enumerated says the cycle listed class/infiniband (EnumErr nil) so
	// presence can be judged; Present holds every monitored device seen.
	Enumerated bool
	EnumErr    error
	Present    map[string]Presence
	// Returned are monitored devices that came back after this process
	// had seen them leave (driver reload, hot plug), since the last cycle.
	Returned []string

	// Ports are the monitored ports, in discovery order. Plan increments
	// whenever the read plan is built again (a new Ports slice, new
	// Samples); a check that keeps per-port state by index starts over.
	Ports []*Port
	Plan  uint64
	// ActiveChanged: a port came up or went down this cycle.
	ActiveChanged bool

	// Counters are the counter table's enabled rows (Sample.Rows index
	// it); CounterTick says this cycle sampled them, at CounterAt (the
	// tick the samples stand for); FirstTick is the process's first.
	Counters    []Counter
	CounterTick bool
	CounterAt   time.Time
	FirstTick   bool

	// Reads are the files (and driver calls) read this cycle with their
	// outcome: hung, parked, failed, or read.
	Reads []Read

	// AERTick says the PCIe AER files were read this cycle; AER are the
	// functions on the monitored NICs' paths, their readings valid when
	// AERTick.
	AERTick bool
	AER     []*AERFunction

	// SanityDue says the link sanity pass is due this cycle.
	SanityDue bool

	// KernelLog is what the kernel log gave this cycle.
	KernelLog KernelLog

	// FarEnd is the far end's latest reading (nil when it is not read:
	// the one-shot check, [farEnd] off). It is shared and immutable.
	FarEnd *farend.PeerReading
	// LinkStory is what the last pass read of the RoCE ports'
	// transceivers and of devlink (LinkStory.New: a pass finished since
	// the last cycle).
	LinkStory LinkStory

	// Inventory is the PCI inventory's last scan (state polls only;
	// Inventory.Scanned says it is this poll's).
	Inventory *Inventory
	// Matrix is the GPU↔NIC matrix the roles came from (nil when
	// nicInclusionRegexOverride pinned them or there was none).
	Matrix *gpumeta.Matrix

	planned map[string]bool
	read    func(path string) ([]byte, error)
}

// Planned reports whether the read plan reads path (a file whose
// condition must clear when it leaves the plan).
func (o *Observation) Planned(path string) bool { return o.planned[path] }

// ReadFile is the observer's one-shot read (deadline-bounded, sharing the
// poll's stuck bookkeeping), for a check that must look at a file the
// plan does not read: the link sanity pass, a group's sm_lid while it
// waits for a subnet manager.
func (o *Observation) ReadFile(path string) ([]byte, error) { return o.read(path) }

// Presence is what presence judging needs of a device seen now, and what
// a NIC that disappears keeps in every event and view: its role and the
// GPUs behind it.
type Presence struct {
	LinkLayer  string
	PCIAddress string
	Role       topology.Role
	RoleReason string
	// GPUs describes the GPUs behind it (Observer.GPUs).
	GPUs string
}

// Port is one monitored port as the cycle saw it.
type Port struct {
	Device *topology.Device
	Port   *topology.Port
	// NetDev is the port's netdev ("" without one).
	NetDev string
	// Link is the last state read; Operstate the RoCE netdev's operstate
	// ("" when there is none or it never read). Observed says Link holds
	// a reading of this process; Readable that this cycle read and parsed
	// both state files (a port that was not is not judged).
	Link      sysfs.Link
	Operstate string
	Observed  bool
	Readable  bool
	// LinkDown is why the port's link went down, as its driver said when
	// it left ACTIVE (RoCE only; empty while up or when nothing was said).
	LinkDown LinkDown
	// RateGbps is the port's rate and RateText as sysfs printed it ("" when
	// never read).
	RateGbps float64
	RateText string
	// Samples are the port's counter files and driver statistics as the
	// last counter tick read them.
	Samples []Sample
}

// Up reports whether the port was last seen up (sysfs.Link.Up).
func (p *Port) Up() bool { return p.Observed && p.Link.Up() }

// Key names the port as events and views do.
func (p *Port) Key() event.PortRef { return event.PortRef{Device: p.Device.Name, Port: p.Port.Num} }

// errNotSampled is a sample no counter tick has read yet.
var errNotSampled = errors.New("not sampled yet")

// Sample is one counter file (or driver statistic) of a port as the last
// counter tick read it; its value stands between ticks.
type Sample struct {
	// Path is the file, or "ethtool:<netdev>" for a driver statistic.
	Path string
	// Rows index Observation.Counters: the rows that read this file.
	Rows []int
	// Value is the counter, valid when Err is nil.
	Value uint64
	Err   error
	// Unchanged says the file read the same bytes as at the tick before
	// (never on the first reading after the plan was built).
	Unchanged bool
	// At is the tick the sample stands for and Since the tick of the last
	// successful reading before it.
	At, Since time.Time
}

// Read is one file (or driver call) the cycle read.
type Read struct {
	Path string
	Err  error
	// Source: a driver call ("ethtool:<netdev>"), not a file.
	Source bool
	// Device, Port and LinkLayer are the port the plan reads it for.
	Device    string
	Port      int
	LinkLayer string
}

// AERFunction is one PCI function on the path of monitored NICs, read
// once per AER cadence however many NICs sit below it.
type AERFunction struct {
	Address string
	// Label says what the function is ("NIC function mlx5_0", "switch port
	// above mlx5_0, mlx5_1"); Check is the check name its events carry (the
	// degradation check of the first NIC's link layer); Ports are the
	// monitored ports below it.
	Label string
	Check string
	Ports []event.PortRef
	// Files says which classes the function has counter files for.
	Files [aerfile.NumClasses]bool
	// Reading is the last read of its counter files (Reading.Any false:
	// nothing could be read); RootTotal is a root port's total received
	// from below per class, RootOK which of them read.
	Reading   aerfile.Reading
	Readable  bool
	RootTotal [aerfile.NumClasses]uint64
	RootOK    [aerfile.NumClasses]bool
}
