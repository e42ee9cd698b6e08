package observe

import (
	"log/slog"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/reader"
)

// The checks a step serves, as the boundary names them.
var (
	stateChecks       = []string{event.InfiniBandStateCheck, event.EthernetStateCheck}
	degradationChecks = []string{event.InfiniBandDegradationCheck, event.EthernetDegradationCheck}
	aerChecks         = []string{event.PCIeAERCheck}
)

// Observer is one host as the daemon looks at it: discovery, the read
// plan, the reads and their cadences. It is not safe for concurrent use;
// one loop drives it.
type Observer struct {
	cfg   Config
	log   *slog.Logger
	boot  Boot
	rd    *reader.Reader
	seams Seams
	b     Boundary

	names []string
	// seen holds every monitored device discovered in this process.
	seen      map[string]bool
	lister    *topology.Lister
	listerDir string
	// lastDiscover is when a poll last ran discovery (or first polled);
	// problemsLogged the problems discovery logged (each logged once
	// while it lasts).
	lastDiscover   time.Time
	problemsLogged map[string]bool
	present        map[string]Presence
	devices        []*topology.Device
	matrix         *gpumeta.Matrix
	// metaFiles joins a metadata read still hung from an earlier
	// classification (gpumeta.LoadWithin).
	metaFiles    regularfile.Joined
	unclassified string
	// gpusOf describes the GPUs behind each monitored device (gpusBehind).
	gpusOf map[string]string
	// returned are devices back after leaving, not yet handed to a cycle.
	returned []string

	ports []*portPlan
	// availLogged is the counter availability last logged per device.
	availLogged map[string]string
	files       []*reader.File
	// state is read every state poll, counter every counter tick; both
	// alias entries of files.
	state   cadence
	counter cadence
	planned map[string]bool
	planGen uint64

	unreadable        map[string]bool // per device: core files unreadable, logged once
	stuckBuf          []*reader.File
	cycles            uint64
	devicesSetChanged bool
	activeChanged     bool
	rateChanged       bool
	// viewChanged: something the published verdict shows moved (a port's
	// observation or rate, a counter's value, the plan).
	viewChanged bool
	// storyStale: a port's link state or operstate changed since the link
	// story's pass was last told the ports' states.
	storyStale bool

	// nextStatePoll and nextCounterTick schedule the two cadences (see
	// NextWake); counterTicks counts counter ticks since start.
	nextStatePoll   time.Time
	nextCounterTick time.Time
	counterTicks    uint64
	lastSanity      time.Time

	// aer is the PCIe AER read plan (aer.go).
	aer *aerPlan
	// statsUnavailable is why each netdev's driver statistics could not
	// be opened, as last logged (phy.go).
	statsUnavailable map[string]string
	// statsStale holds the driver-statistics sources of this plan whose
	// call failed with ENODEV (a stale netdev name), each of which asked
	// for one rediscovery.
	statsStale map[string]bool
	// netdevsAbsent counts the ports of this plan planned without their
	// netdev (absent at the plan build): discovery looks again every
	// unusableReprobe while there are any.
	netdevsAbsent int
	// discoverLogs collapses a rediscovery failure that keeps coming back.
	discoverLogs repeats.Limiter
	// netdevUnreadable holds the netdevs whose operstate could not be
	// read, said once per episode; netdevGone asks for one rediscovery
	// when one disappears (netdev.go); replan asks for the plan to be
	// built again once the cycle is over.
	netdevUnreadable map[string]bool
	netdevGone       bool

	// inv is the PCI inventory's last scan and cadence (inventory.go).
	inv inventory
	// kl is the kernel log's reader (kernellog.go).
	kl kernelLogReader
	// fe is what the far end's reader is told and what it read (farend.go).
	fe farEndWatch
	// nlLinks asks ethtool netlink for link-down reasons (linkdown.go);
	// linkStateUnsupported: the kernel has none, said once.
	nlLinks              *netlinkLinkStates
	linkStateUnsupported bool
	// story is the link story's pass (linkstory.go): storyGen the pass
	// last handed on, storyPlan the plan its targets came from.
	story         *storyReader
	storyGen      uint64
	storyPlan     uint64
	storySlowSaid bool

	obs   Observation
	steps cycleSteps
	// portsOf are the plan's ports as observations show them (planGen is
	// the plan they were made for).
	portsOf     []*Port
	portsOfPlan uint64
}

// owner is the port a planned file is read for.
type owner struct {
	dev       string
	port      int
	linkLayer string
}

// cadence is the files read together, and the port each is read for.
type cadence struct {
	files  []*reader.File
	owners []owner
}

func (c *cadence) add(f *reader.File, ow owner) {
	c.files = append(c.files, f)
	c.owners = append(c.owners, ow)
}

func (c *cadence) reset() {
	c.files, c.owners = c.files[:0], c.owners[:0]
}

// New prepares an observer; Discover makes its first plan. b is the
// checks' boundary (nil: none).
func New(cfg Config, boot Boot, log *slog.Logger, seams Seams, b Boundary) *Observer {
	if b == nil {
		b = noBoundary{}
	}
	o := &Observer{
		cfg: cfg, log: log, boot: boot, seams: seams, b: b,
		unreadable:  map[string]bool{},
		present:     map[string]Presence{},
		availLogged: map[string]string{},
		planned:     map[string]bool{},
		// An hour: a failure that persists is said once an hour with the
		// count, not at every once-a-minute re-probe.
		discoverLogs: repeats.Limiter{Window: time.Hour},
	}
	ro := readerOptions(&cfg)
	ro.Faults = seams.ReadFaults
	ro.KeepOpen = ro.KeepOpen || seams.KeepOpen
	o.rd = reader.New(ro)
	o.obs.read = o.readFile
	o.makeSteps()
	return o
}

// Ports are the monitored ports of the read plan, as the last cycle saw
// them (the views read them between cycles).
func (o *Observer) Ports() []*Port {
	if o.portsOfPlan != o.planGen || len(o.portsOf) != len(o.ports) {
		o.portsOf = make([]*Port, 0, len(o.ports))
		for _, p := range o.ports {
			o.portsOf = append(o.portsOf, &p.Port)
		}
		o.portsOfPlan = o.planGen
	}
	return o.portsOf
}

// Classify sets what a discovery does when roles cannot be classified
// (Config.Unclassified): a one-shot check reads every Mellanox PF with an
// unknown role instead of failing.
func (o *Observer) Classify(unclassifiedOK bool) { o.cfg.Unclassified = unclassifiedOK }

// Counters are the counter table's rows the plan reads (Sample.Rows index
// them).
func (o *Observer) Counters() []Counter { return o.cfg.Counters }

// AER are the PCI functions of the AER read plan.
func (o *Observer) AER() []*AERFunction {
	if o.aer == nil {
		return nil
	}
	return o.aer.obs
}

// ReadPlan reads every file (and driver call) of the plan once, parsing
// and judging nothing: the reader alone, what the cycle benchmarks compare
// the cycle with.
func (o *Observer) ReadPlan() { o.stuckBuf = o.rd.Read(o.files, o.stuckBuf[:0]) }

// PlanFiles are the paths of every file (and driver call) of the read plan.
func (o *Observer) PlanFiles() []string {
	out := make([]string, 0, len(o.files))
	for _, f := range o.files {
		out = append(out, f.Path)
	}
	return out
}

// Devices returns the devices of the last discovery.
func (o *Observer) Devices() []*topology.Device { return o.devices }

// Classification says why roles are unknown ("" when they were
// classified): Config.Unclassified only.
func (o *Observer) Unclassified() string { return o.unclassified }

// GPUs describes the GPUs behind a monitored device (noGPUAffinity when
// none), and ok is false for a device that is not monitored.
func (o *Observer) GPUs(device string) (string, bool) {
	g, ok := o.gpusOf[device]
	return g, ok
}

// ReadFile is the one-shot read of discovery and the sanity passes: the
// poll's deadline, worker and stuck bookkeeping, so a hung attribute costs
// one readTimeout and is never read again while its first read hangs.
func (o *Observer) ReadFile(path string) ([]byte, error) { return o.readFile(path) }

func (o *Observer) readFile(path string) ([]byte, error) { return o.rd.ReadFile(path, 0) }

// TakeViewChanged reports whether anything the published verdict shows
// moved since the last call: a port's observation or rate, a counter's
// value, an AER root total, the read plan.
func (o *Observer) TakeViewChanged() bool {
	c := o.viewChanged
	o.viewChanged = false
	return c
}

// Discover runs discovery and role classification and rebuilds the read
// plan. It fails when classification is impossible (DESIGN.md difference
// 7): the caller refuses to start.
func (o *Observer) Discover() error {
	devs, probs, err := topology.DiscoverWith(o.cfg.Paths, o.cfg.Filter, o.readDiscoveryFile)
	if err != nil {
		return err
	}
	o.logProblems(probs)
	if err := o.classify(devs); err != nil {
		return err
	}
	o.noteReturned(devs)
	o.devices = devs
	o.names = o.names[:0]
	for _, d := range devs {
		o.names = append(o.names, d.Name)
	}
	if o.lister == nil || o.cfg.Paths.ClassInfiniBand != o.listerDir {
		if o.lister != nil {
			o.lister.Close()
		}
		o.lister = topology.NewLister(o.cfg.Paths.ClassInfiniBand)
		o.listerDir = o.cfg.Paths.ClassInfiniBand
	}
	o.lister.SetKnown(o.names)
	o.lister.SetUnusable(unusableEntries(devs, probs))
	o.gpusOf = map[string]string{}
	for _, d := range devs {
		if d.Monitored() {
			o.gpusOf[d.Name] = o.gpusBehind(d)
		}
	}
	clear(o.present)
	for _, d := range devs {
		if d.Monitored() {
			o.present[d.Name] = Presence{LinkLayer: d.LinkLayer(), PCIAddress: d.PCIAddress, Role: d.Role,
				RoleReason: event.Clean(d.RoleReason), GPUs: o.gpusOf[d.Name]}
		}
	}
	o.buildPlan()
	o.inv.due = true // judged against this discovery at the next state poll
	o.devicesSetChanged = true
	o.viewChanged = true
	return nil
}

// loadMetadata reads gpu_metadata.json within the read deadline (the
// sysfs reads' own, at least a second: the file is read whole, and is not
// an attribute the kernel answers from memory).
func (o *Observer) loadMetadata(path string) (*gpumeta.Matrix, error) {
	return gpumeta.LoadWithin(&o.metaFiles, path, max(o.cfg.ReadTimeout, time.Second))
}

func (o *Observer) classify(devs []*topology.Device) error {
	c, err := Classify(devs, ClassifyOptions{Paths: o.cfg.Paths, Filter: o.cfg.Filter, TopologySource: o.cfg.TopologySource,
		MetadataPath: o.cfg.MetadataPath, Unclassified: o.cfg.Unclassified, LoadMetadata: o.loadMetadata}, o.readFile)
	for _, n := range c.Notes {
		o.log.Warn("topology sources disagree", "detail", n)
	}
	if c.RouteErr != nil {
		o.log.Warn("cannot read the default route; management NICs are recognised by NUMA and DPU type only", "err", c.RouteErr)
	}
	if err != nil {
		return err
	}
	if c.Matrix != nil {
		o.matrix = c.Matrix
	}
	o.unclassified = c.Unclassified
	return nil
}

// noteReturned records the monitored devices that came back after this
// process had seen them leave (driver reload, hot plug): their counters
// start from a fresh baseline (DESIGN.md difference 11).
func (o *Observer) noteReturned(devs []*topology.Device) {
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	was := make(map[string]bool, len(o.devices))
	for _, d := range o.devices {
		was[d.Name] = true
	}
	for _, d := range devs {
		if !d.Monitored() {
			continue
		}
		if o.seen[d.Name] && !was[d.Name] {
			o.returned = append(o.returned, d.Name)
		}
		o.seen[d.Name] = true
	}
}

// unusableEntries are the names discovery listed but could not describe
// at all (their directory is a dangling or looping link).
func unusableEntries(devs []*topology.Device, probs []topology.Problem) []string {
	var out []string
	for _, pr := range probs {
		if !slices.ContainsFunc(devs, func(d *topology.Device) bool { return d.Name == pr.Device }) && !slices.Contains(out, pr.Device) {
			out = append(out, pr.Device)
		}
	}
	return out
}

// logProblems logs discovery's problems that the previous discovery did
// not have: a rediscovery (a reload, a device appearing, the re-probe of
// a broken entry) must not repeat the same warnings.
func (o *Observer) logProblems(probs []topology.Problem) {
	seen := make(map[string]bool, len(probs))
	var fresh []topology.Problem
	for _, pr := range probs {
		k := pr.Error()
		seen[k] = true
		if !o.problemsLogged[k] {
			fresh = append(fresh, pr)
		}
	}
	o.problemsLogged = seen
	topology.LogProblems(o.log, fresh)
}

// rediscover runs discovery again, keeping the previous device list when
// it fails. A failure that persists (the GPU metadata gone, say) would
// otherwise be logged at every re-probe, once a minute while a netdev is
// absent: repeats are counted (discoverLogs).
func (o *Observer) rediscover() {
	err := o.Discover()
	if err == nil {
		return
	}
	if ok, n := o.discoverLogs.Note(err.Error(), o.obs.Now); ok {
		o.log.Error("rediscovery failed; keeping the previous device list", "err", err, "repeats", n)
	}
}

// Reconfigure applies a validated configuration between cycles: the
// reader's bounds in place, the cadence, and a rediscovery when what
// decides the device set or the roles changed (otherwise the plan is
// built again for the new counter rows and checks).
func (o *Observer) Reconfigure(cfg Config, now time.Time) {
	rediscover := cfg.Paths != o.cfg.Paths || cfg.ExclusionRaw != o.cfg.ExclusionRaw ||
		cfg.InclusionRaw != o.cfg.InclusionRaw || cfg.TopologySource != o.cfg.TopologySource ||
		cfg.MetadataPath != o.cfg.MetadataPath
	if cfg.ReadTimeout != o.cfg.ReadTimeout || cfg.MaxStuckReads != o.cfg.MaxStuckReads || cfg.Paths.SysfsRoot != o.cfg.Paths.SysfsRoot ||
		cfg.ParkReprobe != o.cfg.ParkReprobe {
		// In place: a new reader would forget the reads still hung in the
		// kernel, read those files again and strand one more thread on
		// each at every reload.
		o.rd.SetOptions(readerOptions(&cfg))
	}
	if cfg.PollInterval != o.cfg.PollInterval {
		o.nextStatePoll = now // the new cadence starts at the next wake
	}
	o.cfg = cfg
	// The filter, --checks or [inventory] may have changed what the
	// inventory judges and how; a reload is also an operator's "look
	// again", VPD included.
	o.inv.due = true
	clear(o.inv.vpd)
	if rediscover {
		if err := o.Discover(); err != nil {
			o.log.Error("rediscovery after reload failed; keeping the previous device list", "err", err)
			o.buildPlan()
		}
		return
	}
	o.buildPlan()
}

// Close releases the observer's descriptors and its reader's worker.
func (o *Observer) Close() {
	o.closePlan()
	o.closeAER()
	o.CloseKernelLog()
	o.rd.Close()
	if o.nlLinks != nil {
		o.nlLinks.close()
	}
	if o.story != nil {
		o.story.close()
		o.story = nil
	}
	if o.lister != nil {
		o.lister.Close()
	}
}

// Stats are the plan's size: files per cycle, monitored ports, and the
// PCIe AER functions and files (benchmarks and tests report them).
type Stats struct {
	Files, StateFiles, CounterFiles, Ports int
	AERFunctions, AERFiles                 int
	Stuck, Parked                          int
	// Cycles are the state polls and CounterTicks the counter ticks
	// since start; LastDiscover is when a poll last ran discovery.
	Cycles, CounterTicks uint64
	LastDiscover         time.Time
}

// Stats returns the plan's size now.
func (o *Observer) Stats() Stats {
	s := Stats{Files: len(o.files), StateFiles: len(o.state.files), CounterFiles: len(o.counter.files), Ports: len(o.ports),
		Stuck: o.rd.StuckCount(), Parked: o.rd.ParkedCount(), Cycles: o.cycles, CounterTicks: o.counterTicks, LastDiscover: o.lastDiscover}
	if o.aer != nil {
		s.AERFunctions, s.AERFiles = len(o.aer.fns), len(o.aer.files)
	}
	return s
}

// noGPUAffinity is what a NIC's events say when no GPU sits behind it
// (storage and management NICs, or a compute NIC the matrix puts on
// another switch).
const noGPUAffinity = "no GPU affinity"

// NoGPUAffinity is GPUs' answer for a NIC with no GPU behind it.
const NoGPUAffinity = noGPUAffinity

// gpusBehind describes the GPUs behind a device (PIX/PXB in the matrix),
// e.g. "GPU3 (0000:5d:00.0 GPU-8c1e…)", for every event of its ports and
// for the views: index, PCI address and, where the metadata has it, the
// UUID a scheduler drains by.
func (o *Observer) gpusBehind(dev *topology.Device) string {
	if dev.Role != topology.RoleCompute {
		return noGPUAffinity
	}
	if g := gpumeta.Describe(o.matrix.Near(dev.Name)); g != "" {
		// The UUIDs come from gpu_metadata.json, which may hold any
		// bytes: a NUL or invalid UTF-8 here broke every D-Bus reply that
		// carries the port (DESIGN.md section 9).
		return event.Clean(g)
	}
	return noGPUAffinity
}
