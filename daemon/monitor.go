package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/checks/sanity"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/reader"
	"github.com/nichealth/nichealthd/topology/roles"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Monitor is one host's detection state machine: discovery, the read plan,
// and every check. It is not safe for concurrent use; the Runner serialises
// access.
type Monitor struct {
	cfg   *config.Config
	log   *slog.Logger
	mem   *Memory
	start checks.Start
	boot  persist.BootStatus
	rd    *reader.Reader
	// seams are a test's stand-ins for the kernel; none in production.
	seams Seams

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
	present        map[string]checks.Presence
	devices        []*topology.Device
	matrix         *gpumeta.Matrix
	// gpusOf describes the GPUs behind each monitored device (gpusBehind).
	gpusOf map[string]string
	ports  []*portPlan
	planOf map[*topology.Port]*portPlan // the plan entry of each monitored port
	// availLogged is the counter availability last logged per device.
	availLogged map[string]string
	files       []*reader.File
	defs        []counters.Definition
	stateChk    *checks.PortStateCheck
	eval        *counters.Evaluator

	unreadable        map[string]bool // per device: core files unreadable, logged once
	stuckBuf          []*reader.File
	lastPoll          time.Time
	cycles            uint64
	devicesSetChanged bool
	// lastChange is when each port last crossed healthy/unhealthy.
	lastChange map[string]time.Time
	// stuckReported holds files whose hung read was reported and has not
	// read successfully since.
	stuckReported map[string]fileRef
	// parkReported holds files whose parking was reported and that have
	// not read successfully since (park.go).
	parkReported map[string]fileRef
	// pendingSpecs are emitted with the next cycle (start-up reconcile).
	pendingSpecs    []event.Spec
	lastSanity      time.Time
	lastCharDev     time.Time
	charDevFindings []sanity.Finding
	rateChanged     bool
	viewDefs        []counters.Definition // scratch for D-Bus views (under d.mu)
	// unclassifiedOK (one-shot checks only): when roles cannot be
	// classified, check every PF with an unknown role instead of failing;
	// unclassifiedNote then says why.
	unclassifiedOK   bool
	unclassifiedNote string
	// viewChanged: something the published verdict shows moved (a port's
	// observation or rate, a counter's value or rate, the plan): the
	// daemon rebuilds the snapshot only then, so a quiet poll stays cheap.
	viewChanged bool
	ratesSeen   uint64 // the evaluator's RateChanges at the last TakeViewChanged
	// activeChanged: some port became or stopped being active this cycle,
	// so card homogeneity must be judged again (DESIGN.md difference 9).
	activeChanged bool

	// stateFiles are read every state poll, counterFiles every counter
	// tick; both alias entries of files.
	stateFiles   []*reader.File
	counterFiles []*reader.File
	// nextStatePoll and nextCounterTick schedule the two cadences (see
	// NextWake); counterTicks counts counter ticks since start.
	nextStatePoll   time.Time
	nextCounterTick time.Time
	counterTicks    uint64

	// aer is the PCIe AER read plan (daemon/aer.go).
	aer *aerPlan

	// statsUnavailable is why each netdev's driver statistics could not
	// be opened, as last logged (phy.go).
	statsUnavailable map[string]string
	// guard is the boundary around every check's step (guard.go).
	guard *checkGuard
	// netdevUnreadable holds the netdevs whose operstate could not be
	// read, said once per episode; netdevGone asks for one rediscovery
	// when one disappears (netdev.go).
	netdevUnreadable map[string]bool
	netdevGone       bool
	// kl is the kernel-log check and its reader (daemon/kernellog.go);
	// nil when it is off or in a one-shot check.
	kl *kernelLog
	// inv is the PCI inventory and the expected one (daemon/inventory.go).
	inv *inventoryState
}

type portPlan struct {
	dev       *topology.Device
	port      *topology.Port
	netdev    string
	state     *reader.File
	phys      *reader.File
	rate      *reader.File
	oper      *reader.File
	counters  []counterRead
	phyAvail  [2][]string // driver statistics present, missing (phy.go)
	obs       checks.Observation
	observed  bool // obs holds a reading from this boot of the daemon
	judged    checks.Observation
	wasJudged bool // judged holds the observation the state check last saw
	rateGbps  float64
	rateRaw   [64]byte
	rateLen   int
	operRaw   [32]byte
	operLen   int
}

type counterRead struct {
	file *reader.File
	defs []int // indexes into Monitor.defs
	// last holds the previous reading; seen says it is valid. A fresh plan
	// (start, reload, rediscovery) starts unseen, so every definition is
	// evaluated at least once under the current configuration.
	last    [24]byte
	lastLen int
	seen    bool
	// lastAt is the tick of the last successful read: the snapshot of an
	// unlatched delta counter holds the value read then, so a delta is
	// measured over the tick since, not since the value last changed.
	lastAt time.Time
	phy    *phyRead // a driver statistic rather than a file (phy.go)
}

// NewMonitor prepares a monitor over the checks' memory. bootStatus says
// what the first poll knows (seed 3.4 step 4).
func NewMonitor(cfg *config.Config, mem *Memory, bootStatus persist.BootStatus, log *slog.Logger) *Monitor {
	return newMonitor(cfg, mem, bootStatus, log, Seams{})
}

// newMonitor is NewMonitor with a test's seams.
func newMonitor(cfg *config.Config, mem *Memory, bootStatus persist.BootStatus, log *slog.Logger, seams Seams) *Monitor {
	m := &Monitor{
		cfg: cfg, log: log, mem: mem, seams: seams, guard: newCheckGuard(log, seams.Step),
		stateChk:      checks.NewPortStateCheck(log),
		unreadable:    map[string]bool{},
		lastChange:    map[string]time.Time{},
		stuckReported: map[string]fileRef{},
		present:       map[string]checks.Presence{},
		planOf:        map[*topology.Port]*portPlan{},
		availLogged:   map[string]string{},
	}
	// A device renamed under its PCI address keeps everything every check
	// remembers of it.
	m.stateChk.OnRename = func(old, nw string) {
		mem.Counters.Rename(old, nw)
		mem.Sanity.Rename(old, nw)
	}
	m.boot = bootStatus
	if bootStatus.Baseline() {
		m.start = checks.Baseline
	} else {
		m.start = checks.Resume
	}
	ro := readerOptions(cfg)
	ro.Faults = seams.ReadFaults
	m.rd = reader.New(ro)
	m.eval = counters.NewEvaluator(counters.Options{Logger: log, XmitWaitBytesPerTick: cfg.XmitWaitBytesPerTick,
		FreshStart: bootStatus == persist.BootFresh})
	// A counter disabled or removed while the daemon was down must not keep
	// its latch forever: reconcile the persisted state with the table now.
	var all []counters.Definition
	all, m.defs = counterTables(cfg)
	m.pendingSpecs = m.eval.Reconcile(mem.Counters, all)
	return m
}

// counterTables returns the whole counter table (what Reconcile compares
// latches against) and the enabled definitions the read plan uses; both
// empty when counter detection is off.
func counterTables(cfg *config.Config) (all, enabled []counters.Definition) {
	if !cfg.CountersEnabled {
		return nil, nil
	}
	return cfg.Counters, counters.PlanFor(cfg.Counters)
}

// Devices returns the devices of the last discovery.
func (m *Monitor) Devices() []*topology.Device { return m.devices }

// TakeViewChanged reports whether anything the published verdict shows
// moved since the last call: a port's observation or rate, a counter's
// value or computed rate, the read plan.
func (m *Monitor) TakeViewChanged() bool {
	if r := m.eval.RateChanges(); r != m.ratesSeen {
		m.ratesSeen, m.viewChanged = r, true
	}
	c := m.viewChanged
	m.viewChanged = false
	return c
}

// Memory returns what the checks remember (the daemon saves it).
func (m *Monitor) Memory() *Memory { return m.mem }

// Discover runs discovery and role classification and rebuilds the read
// plan. It fails when classification is impossible (DESIGN.md difference 7):
// the caller refuses to start.
func (m *Monitor) Discover() error {
	devs, probs, err := topology.DiscoverWith(m.cfg.Paths, m.cfg.Filter, m.readFile)
	if err != nil {
		return err
	}
	m.logProblems(probs)
	if err := m.classify(devs); err != nil {
		return err
	}
	m.rebaselineReturned(devs)
	m.devices = devs
	m.names = m.names[:0]
	for _, d := range devs {
		m.names = append(m.names, d.Name)
	}
	if m.lister == nil || m.cfg.Paths.ClassInfiniBand != m.listerDir {
		if m.lister != nil {
			m.lister.Close()
		}
		m.lister = topology.NewLister(m.cfg.Paths.ClassInfiniBand)
		m.listerDir = m.cfg.Paths.ClassInfiniBand
	}
	m.lister.SetKnown(m.names)
	m.lister.SetUnusable(unusableEntries(devs, probs))
	m.gpusOf = map[string]string{}
	for _, d := range devs {
		if d.Monitored() {
			m.gpusOf[d.Name] = m.gpusBehind(d)
		}
	}
	clear(m.present)
	for _, d := range devs {
		if d.Monitored() {
			m.present[d.Name] = checks.Presence{LinkLayer: d.LinkLayer(), PCIAddress: d.PCIAddress}
		}
	}
	m.buildPlan()
	m.scanInventory()
	m.devicesSetChanged = true
	m.viewChanged = true
	return nil
}

// readFile is the one-shot read of discovery and the sanity passes: the
// poll's deadline, worker and stuck bookkeeping, so a hung attribute costs
// one readTimeout and is never read again while its first read hangs.
// rebaselineReturned tells the counter check which monitored devices came
// back after this process had seen them leave (driver reload, hot plug):
// their counters start from a fresh baseline (DESIGN.md difference 11).
func (m *Monitor) rebaselineReturned(devs []*topology.Device) {
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	was := make(map[string]bool, len(m.devices))
	for _, d := range m.devices {
		was[d.Name] = true
	}
	for _, d := range devs {
		if !d.Monitored() {
			continue
		}
		if m.seen[d.Name] && !was[d.Name] {
			m.eval.Rebaseline(d.Name)
		}
		m.seen[d.Name] = true
	}
}

func (m *Monitor) readFile(path string) ([]byte, error) {
	return m.rd.ReadFile(path, 0)
}

func (m *Monitor) classify(devs []*topology.Device) error {
	if m.cfg.Filter.Overridden() {
		// nicInclusionRegexOverride: the operator hand-pinned the list; the
		// NUMA gate and topology classification are skipped (seed 12.1).
		for _, d := range devs {
			switch {
			case d.Mellanox && d.LimitedPF:
				d.Role, d.RoleReason = topology.RoleUnknown, roles.LimitedPFReason
			case d.Mellanox && !d.IsVF:
				d.Role = roleByLinkLayer(d)
				d.RoleReason = string(d.Role) + ": pinned by nicInclusionRegexOverride"
			}
		}
		return nil
	}
	var nics []*topology.Device
	for _, d := range devs {
		if d.Mellanox && !d.IsVF && !d.LimitedPF {
			nics = append(nics, d)
		}
	}
	if len(nics) == 0 {
		return roles.Classify(devs, nil, nil) // only says why the others are not monitored
	}
	mx, notes, err := gpumeta.SelectWith(m.cfg.TopologySource, m.cfg.MetadataPath, m.cfg.Paths, nics, m.readFile)
	for _, n := range notes {
		m.log.Warn("topology sources disagree", "detail", n)
	}
	if err == nil {
		m.matrix = mx
		dr, derr := roles.DefaultRouteDevices(m.cfg.Paths)
		if derr != nil {
			m.log.Warn("cannot read the default route; management NICs are recognised by NUMA and DPU type only", "err", derr)
		}
		err = roles.Classify(devs, mx, dr)
	}
	if err != nil && m.unclassifiedOK {
		m.unclassifiedNote = classifyUnknown(devs, err)
		return nil
	}
	return err
}

func roleByLinkLayer(d *topology.Device) topology.Role {
	if d.LinkLayer() == topology.LinkLayerEthernet {
		return topology.RoleStorage
	}
	return topology.RoleCompute
}

// Close releases the monitor's descriptors and its reader's worker.
func (m *Monitor) Close() {
	m.closePlan()
	m.closeAER()
	m.closeKernelLog()
	m.rd.Close()
	if m.lister != nil {
		m.lister.Close()
	}
}

func (m *Monitor) closePlan() {
	for _, f := range m.files {
		f.Close()
	}
	m.files = m.files[:0]
	m.stateFiles = m.stateFiles[:0]
	m.counterFiles = m.counterFiles[:0]
	m.ports = m.ports[:0]
	clear(m.planOf)
}

// buildPlan lists every file a steady poll reads. VFs, management and
// excluded devices get no entry: after discovery they cost nothing.
func (m *Monitor) buildPlan() {
	m.viewChanged = true
	old := map[string]*portPlan{}
	for _, p := range m.ports {
		old[checks.PortKey(p.dev.Name, p.port.Num)] = p
	}
	m.closePlan()
	for _, d := range m.devices {
		if !d.Monitored() {
			continue
		}
		var present, missing []string
		for i := range d.Ports {
			port := &d.Ports[i]
			pp := &portPlan{dev: d, port: port, netdev: d.NetDevFor(port.Num)}
			if o := old[checks.PortKey(d.Name, port.Num)]; o != nil {
				pp.obs, pp.observed = o.obs, o.observed
			}
			pp.state = m.addFile(port.Dir+"/state", &m.stateFiles)
			pp.phys = m.addFile(port.Dir+"/phys_state", &m.stateFiles)
			pp.rate = m.addFile(port.Dir+"/rate", &m.stateFiles)
			if port.LinkLayer == topology.LinkLayerEthernet && pp.netdev != "" {
				pp.oper = m.planOperstate(pp)
			}
			if m.degradationEnabled(port.LinkLayer) {
				m.guard.run("plan", degradationChecks, &m.pendingSpecs, func() {
					m.guard.enter(checks.DegradationCheckFor(port.LinkLayer))
					p, ms := counters.Availability(port.Dir, m.cfg.Paths.ClassNet, pp.netdev, m.applicable(port.LinkLayer))
					m.planCounters(pp, ms)
					present, missing = append(present, p...), append(missing, ms...)
					present, missing = append(present, pp.phyAvail[0]...), append(missing, pp.phyAvail[1]...)
				})
			}
			m.ports = append(m.ports, pp)
			m.planOf[port] = pp
		}
		if m.cfg.CountersEnabled {
			m.logAvailability(d.Name, uniq(present), uniq(missing))
		}
	}
	m.forgetUnplannedFiles()
	m.planKernelLog()
	if m.guard.isFailed(aerCheck) {
		m.closeAER()
		return
	}
	m.guard.run("plan", aerChecks, &m.pendingSpecs, func() {
		m.guard.enter(aerCheck)
		m.planAER()
	})
}

// addFile adds a file to the plan and to one of its cadences.
func (m *Monitor) addFile(path string, cadence *[]*reader.File) *reader.File {
	f := reader.NewFile(path)
	m.files = append(m.files, f)
	*cadence = append(*cadence, f)
	return f
}

// planCounters adds the port's counter files, one read per file however
// many definitions share it. A path that resolves outside the device's
// directory through a symlink is never read, and neither is a counter the
// availability check found missing (seed 7.1): the log says it is skipped,
// so it is not opened again, failing every tick, until the next plan build
// (rediscovery, reload) looks for it again.
func (m *Monitor) planCounters(pp *portPlan, missing []string) {
	port := pp.port
	byFile := map[string]int{}
	var phyDefs []int
	for i := range m.defs {
		def := &m.defs[i]
		if !def.AppliesTo(port.LinkLayer) {
			continue
		}
		if def.IsEthtool() {
			phyDefs = append(phyDefs, i)
			continue
		}
		path := def.File(port.Dir, m.cfg.Paths.ClassNet, pp.netdev)
		if path == "" || slices.Contains(missing, def.Name) {
			continue
		}
		resolved, ok := confineCounterPath(def, port.Dir, m.cfg.Paths.ClassNet, pp.netdev, path)
		if !ok {
			m.log.Warn("counter file resolves outside its device directory through a symlink; not read",
				"device", pp.dev.Name, "port", port.Num, "counter", def.Name, "path", path, "resolves_to", resolved)
			continue
		}
		if j, ok := byFile[path]; ok {
			pp.counters[j].defs = append(pp.counters[j].defs, i)
			continue
		}
		byFile[path] = len(pp.counters)
		f := m.addFile(path, &m.counterFiles)
		if def.IsNetdev() {
			f.SetKeepOpen(m.netdevOnSysfs(pp))
		}
		pp.counters = append(pp.counters, counterRead{file: f, defs: []int{i}})
	}
	if len(phyDefs) > 0 {
		pp.phyAvail[0], pp.phyAvail[1] = m.planPHY(pp, phyDefs)
	}
}

// applicable lists the enabled definitions of a link layer.
func (m *Monitor) applicable(linkLayer string) []counters.Definition {
	var out []counters.Definition
	for _, def := range m.defs {
		if def.AppliesTo(linkLayer) {
			out = append(out, def)
		}
	}
	return out
}

// logAvailability logs a device's counter availability once (seed 7.1), and
// again only when it changes (a reload enabling other counters, a firmware
// update): at start and when a device appears, not at every plan rebuild.
// Missing counters are a warning (seed 10.5: "log warning, skip counter");
// they then fail open silently.
func (m *Monitor) logAvailability(dev string, present, missing []string) {
	if m.availLogged == nil {
		m.availLogged = map[string]string{}
	}
	key := strings.Join(present, ",") + "|" + strings.Join(missing, ",")
	if m.availLogged[dev] == key {
		return
	}
	m.availLogged[dev] = key
	if len(missing) == 0 {
		m.log.Info("counter availability", "device", dev, "available", present, "missing", missing)
		return
	}
	m.log.Warn("counter files missing; those counters are skipped on this device (not read) until a reload or rediscovery looks for them again", "device", dev,
		"missing", missing, "available", present,
		"fix", "expected for counters this NIC generation or firmware lacks; set enabled = false for them under [[counterDetection.counters]] if this is permanent")
}

func uniq(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

func (m *Monitor) stateEnabled(ll string) bool {
	c := checks.StateCheckFor(ll)
	return m.cfg.Checks[c] && !m.guard.isFailed(c)
}

func (m *Monitor) degradationEnabled(ll string) bool {
	c := checks.DegradationCheckFor(ll)
	return m.cfg.CountersEnabled && m.cfg.Checks[c] && !m.guard.isFailed(c)
}

// counterTick is the fixed cadence of counter sampling and judging, whatever
// the state poll interval (seed state 12.1): a delta threshold means "per
// 1 s tick", a 100 ms poll must not cut a burst into sub-threshold slices,
// and a 10 s poll must not let one add up ten seconds of errors.
const counterTick = time.Second

// NextWake is when the run loop must call Cycle next: the earlier of the
// next state poll and the next counter tick.
func (m *Monitor) NextWake() time.Time {
	if len(m.counterFiles) > 0 && m.nextCounterTick.Before(m.nextStatePoll) {
		return m.aerWake(m.nextCounterTick)
	}
	return m.aerWake(m.nextStatePoll)
}

// Cycle is one poll, read as the pipeline it is: observe (enumerate, read
// the plan's files, parse each port once), run the checks on that
// observation (presence, card homogeneity, port state, counters on their
// 1 s tick, link sanity), and return their condition changes as event
// specs, which the daemon commits to the outbox and folds into the health
// model. changed says whether what the checks remember moved.
func (m *Monitor) Cycle(now time.Time) ([]event.Spec, bool) {
	// After a reboot or with no state, each check's clear comes first
	// (DESIGN.md difference 5): before what start-up left pending, such as
	// a check disabled by a panic while the plan was built, which the
	// clear must not erase.
	specs := m.openingClears(nil)
	specs, changed := append(specs, m.pendingSpecs...), len(m.pendingSpecs) > 0
	m.pendingSpecs = nil
	// Each check's step runs inside its boundary (guard.go): a panic
	// disables that check alone.
	g := m.guard
	if m.cycles != 0 && now.Before(m.nextStatePoll) {
		// Woken for the counter tick alone: the state poll is slower.
		g.run("counters", degradationChecks, &specs, func() { m.counterCycle(now, &specs, &changed) })
		g.run("pcie-aer", aerChecks, &specs, func() { g.enter(aerCheck); m.aerCycle(now, &specs, &changed) })
		g.run("kernel-log", kernelLogChecks, &specs, func() { g.enter(kernellog.CheckName); m.kernelLogCycle(now, &specs, &changed) })
		m.rebuildAfterCycle()
		return specs, changed
	}
	var enumErr error
	g.run("presence", stateChecks, &specs, func() { enumErr = m.enumerate(now) })
	m.read(m.stateFiles, &specs)
	// Presence first: a renamed device's state moves to its new name
	// before its ports are judged under it.
	g.run("presence", stateChecks, &specs, func() { m.presence(enumErr, &specs, &changed) })
	// Observe every port first: card homogeneity needs all of them.
	g.run("observe", stateChecks, &specs, func() {
		for _, p := range m.ports {
			if c := checks.StateCheckFor(p.port.LinkLayer); !g.isFailed(c) {
				g.enter(c)
				m.observe(p)
			}
		}
	})
	// Ports before cards: a port that falls this cycle is fatal on its own
	// before homogeneity looks at its card, which then does not report it
	// a second time.
	g.run("judge", stateChecks, &specs, func() { m.judgePorts(now, &specs, &changed) })
	g.run("cards", stateChecks, &specs, func() { m.cards(now, &specs, &changed) })
	g.run("counters", degradationChecks, &specs, func() { m.counterCycle(now, &specs, &changed) })
	g.run("pcie-aer", aerChecks, &specs, func() { g.enter(aerCheck); m.aerCycle(now, &specs, &changed) })
	g.run("kernel-log", kernelLogChecks, &specs, func() { g.enter(kernellog.CheckName); m.kernelLogCycle(now, &specs, &changed) })
	g.run("inventory", inventoryChecks, &specs, func() { g.enter(inventoryCheck); m.inventoryCycle(now, &specs, &changed) })
	if m.sanityDue(now) {
		g.run("link-sanity", sanityChecks, &specs, func() { g.enter(sanityCheck); m.runSanity(now, &specs, &changed) })
	} else if !m.cfg.Sanity.Enabled && g.raised[sanityCheck] {
		specs = append(specs, g.resumedSpec(sanityCheck, "link sanity is switched off ([linkSanity] enabled = false)"))
	}
	m.rebuildAfterCycle()
	m.cycles++
	m.lastPoll = now
	m.nextStatePoll = now.Add(m.cfg.PollInterval)
	m.devicesSetChanged = false
	m.activeChanged = false
	return specs, changed
}

// enumerate lists class/infiniband and rediscovers when the device set
// changed. The error says the listing failed (presence is then not judged).
func (m *Monitor) enumerate(now time.Time) error {
	setChanged, err := m.lister.Changed(m.cfg.Filter)
	// An entry discovery could not use (a dangling link) is not a change
	// at every poll; it is looked at again now and then, in case its
	// target appeared.
	if m.lastDiscover.IsZero() || setChanged {
		m.lastDiscover = now
	}
	reprobe := m.lister.Unusable() > 0 && now.Sub(m.lastDiscover) >= unusableReprobe
	if err == nil && (setChanged || reprobe) {
		m.lastDiscover = now
		m.rediscover()
	}
	return err
}

// unusableReprobe is how often discovery runs again while an entry of
// class/infiniband cannot be used.
const unusableReprobe = time.Minute

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
func (m *Monitor) logProblems(probs []topology.Problem) {
	seen := make(map[string]bool, len(probs))
	var fresh []topology.Problem
	for _, pr := range probs {
		k := pr.Error()
		seen[k] = true
		if !m.problemsLogged[k] {
			fresh = append(fresh, pr)
		}
	}
	m.problemsLogged = seen
	topology.LogProblems(m.log, fresh)
}

// openingClears adds, on the first poll after a reboot or with no state,
// one check-scoped clear per enabled check (DESIGN.md difference 5).
func (m *Monitor) openingClears(specs []event.Spec) []event.Spec {
	if m.cycles != 0 || m.start != checks.Baseline {
		return specs
	}
	why := "no previous state (first start, or the state file was missing or unreadable)"
	if m.boot == persist.BootRebooted {
		why = "host rebooted (boot ID changed)"
	}
	for _, c := range config.AllChecks {
		if m.cfg.Checks[c] && (m.cfg.CountersEnabled || !strings.Contains(c, "Degradation")) {
			specs = append(specs, checks.ClearedSpec(c, why))
		}
	}
	return specs
}

// presence judges device disappearance and renames after a complete
// enumeration (DESIGN.md difference 3).
func (m *Monitor) presence(enumErr error, specs *[]event.Spec, changed *bool) {
	if enumErr != nil {
		if !m.unreadable["*enumeration*"] {
			m.unreadable["*enumeration*"] = true
			m.log.Warn("cannot list RDMA devices; device disappearance is not judged until listing works again",
				"dir", m.cfg.Paths.ClassInfiniBand, "err", enumErr)
		}
		return
	}
	ss, ch := m.stateChk.Enumerated(m.mem.Ports, m.present, m.cfg.Paths.ClassInfiniBand)
	*specs = append(*specs, ss...)
	*changed = *changed || ch
}

// judgePorts runs the state check on every port whose observation moved.
// It is edge-triggered: an observation equal to the one it last judged
// cannot cross a boundary, so a steady poll skips it (and its
// allocations) entirely.
func (m *Monitor) judgePorts(now time.Time, specs *[]event.Spec, changed *bool) {
	first := m.cycles == 0
	for _, p := range m.ports {
		if !p.observed || !m.stateEnabled(p.port.LinkLayer) || p.state.Err != nil || p.phys.Err != nil ||
			(!first && p.wasJudged && p.obs == p.judged) {
			continue
		}
		m.guard.enter(checks.StateCheckFor(p.port.LinkLayer))
		p.judged, p.wasJudged = p.obs, true
		start := checks.Steady
		if first {
			start = m.start
		}
		s, ch := m.stateChk.Evaluate(m.mem.Ports, p.obs, start)
		// A torn state/phys_state pair is held one poll: the same pair
		// next poll must be judged, not skipped as unchanged.
		p.wasJudged = !m.stateChk.Holding(p.dev.Name, p.port.Num)
		*changed = *changed || ch
		if s != nil {
			m.lastChange[checks.PortKey(p.dev.Name, p.port.Num)] = now
			*specs = append(*specs, *s)
		}
	}
}

// read reads files and reports each hung read once (read-stuck) and its
// return (read-recovered).
func (m *Monitor) read(files []*reader.File, specs *[]event.Spec) {
	m.stuckBuf = m.rd.Read(files, m.stuckBuf[:0])
	if m.rd.StuckCount() > 0 {
		// Skipped because an earlier read of the path still hangs: one
		// started by discovery, or by the plan before a reload rebuilt it.
		for _, f := range files {
			if _, reported := m.stuckReported[f.Path]; f.Err == reader.ErrStuck && !reported {
				m.stuckBuf = append(m.stuckBuf, f)
			}
		}
	}
	for _, f := range m.stuckBuf {
		// Once per episode, keyed by path so a plan rebuilt by a reload
		// does not re-announce a file that is still hanging.
		if _, reported := m.stuckReported[f.Path]; !reported {
			dev, port, ll := m.fileOwner(f)
			m.stuckReported[f.Path] = fileRef{dev: dev, port: port, linkLayer: ll}
			*specs = append(*specs, m.stuckSpec(f))
		}
	}
	if len(m.stuckReported) > 0 {
		for _, f := range files {
			if ref, reported := m.stuckReported[f.Path]; reported && f.Err == nil {
				delete(m.stuckReported, f.Path)
				m.log.Info("stuck sysfs read returned; the file is monitored again", "file", f.Path)
				*specs = append(*specs, m.readRecoveredSpec(f.Path, ref, "reading %s works again; the file is monitored again"))
			}
		}
	}
	m.parked(files, specs)
}

// counterCycle samples and judges every counter when the counter tick is
// due (see counterTick). Ticks keep a fixed phase; one that comes more
// than a tick late (a stalled loop) restarts the phase from now.
func (m *Monitor) counterCycle(now time.Time, specs *[]event.Spec, changed *bool) {
	if len(m.counterFiles) == 0 || (m.counterTicks != 0 && now.Before(m.nextCounterTick)) {
		return
	}
	first := m.counterTicks == 0
	// The sample stands for its tick, not for when the loop woke up to
	// take it (DESIGN.md difference 14): two samples one tick apart are a
	// full 1 s window, whatever the wake-up jitter, so a burst is judged
	// over the second it happened in, never spread over two. A tick more
	// than a tick late (a stalled loop) restarts the phase from now.
	at := now
	if next := m.nextCounterTick.Add(counterTick); first || !next.After(now) {
		m.nextCounterTick = now.Add(counterTick)
	} else {
		at = m.nextCounterTick
		m.nextCounterTick = next
	}
	m.counterTicks++
	m.read(m.counterFiles, specs)
	baselines := len(*specs)
	if first {
		// The first tick's per-counter baselines go out one per port.
		defer func() { *specs = counters.FoldBaselines(*specs, baselines) }()
	}
	for _, p := range m.ports {
		if check := checks.DegradationCheckFor(p.port.LinkLayer); m.guard.isFailed(check) {
			continue
		} else if len(p.counters) > 0 {
			m.guard.enter(check)
		}
		for ci := range p.counters {
			cr := &p.counters[ci]
			var v uint64
			raw, err := cr.sample()
			if pe, ok := err.(*reader.PanicError); ok {
				panic(pe) // a driver call's panic, caught on the worker: this check's
			}
			unchanged := err == nil && cr.seen && string(raw) == string(cr.last[:cr.lastLen])
			if !unchanged {
				m.viewChanged = true
			}
			since := cr.lastAt
			if err == nil {
				cr.lastLen = copy(cr.last[:], raw)
				cr.seen, cr.lastAt = true, at
			} else {
				cr.seen = false
			}
			if err == nil {
				v, err = sysfs.ParseCounter(raw)
				if err != nil {
					err = fmt.Errorf("%s: %w", cr.file.Path, err)
				}
			}
			for _, di := range cr.defs {
				if unchanged && !first && m.defs[di].ThresholdType == counters.TypeDelta {
					// A delta counter whose value did not move since the
					// last tick has delta 0, which cannot breach (threshold
					// >= 0), reset, or change a latch: seed 10.4 would do
					// nothing with it, so neither do we.
					continue
				}
				ss, ch := m.eval.Evaluate(m.mem.Counters, counters.Sample{
					Device: p.dev.Name, Port: p.port.Num, LinkLayer: p.port.LinkLayer,
					Def: &m.defs[di], Value: v, Err: err, File: cr.file.Path,
					PortRateGbps: p.rateGbps, Now: at, Since: since,
				}, first && m.start == checks.Baseline)
				*changed = *changed || ch
				*specs = append(*specs, ss...)
			}
		}
	}
}

func (m *Monitor) rediscover() {
	if err := m.Discover(); err != nil {
		m.log.Error("rediscovery failed; keeping the previous device list", "err", err)
	}
}

func (m *Monitor) observe(p *portPlan) {
	if p.state.Err != nil || p.phys.Err != nil {
		m.noteUnreadable(p, p.state.Err, p.phys.Err)
		return
	}
	s, err1 := sysfs.ParseState(p.state.Value())
	ph, err2 := sysfs.ParsePhysState(p.phys.Value())
	if err1 != nil || err2 != nil {
		m.noteUnreadable(p, err1, err2)
		p.state.Err = errors.Join(err1, err2)
		return
	}
	if m.unreadable[p.dev.Name] {
		delete(m.unreadable, p.dev.Name)
		m.log.Info("device readable again", "device", p.dev.Name, "port", p.port.Num)
	}
	o := checks.Observation{Device: p.dev.Name, Port: p.port.Num, LinkLayer: p.port.LinkLayer, State: s, Phys: ph}
	if p.oper != nil && p.oper.Err == nil {
		m.operReadable(p)
		// Converted to a string only when it changes: steady polls stay
		// allocation-free.
		v := sysfs.TrimValue(p.oper.Value())
		if string(v) != string(p.operRaw[:p.operLen]) || !p.observed {
			p.operLen = copy(p.operRaw[:], v)
			o.Operstate = string(v)
		} else {
			o.Operstate = p.obs.Operstate
		}
	} else if p.oper != nil {
		// Unreadable (the netdev was deleted or renamed under a kept
		// descriptor): the port is not judged from a failed read; its
		// last known operstate stands (DESIGN.md difference 3).
		o.Operstate = p.obs.Operstate
		m.operUnreadable(p)
	}
	if p.rate.Err == nil {
		v := p.rate.Value()
		if string(v) != string(p.rateRaw[:p.rateLen]) {
			p.rateLen = copy(p.rateRaw[:], v)
			m.viewChanged = true
			if r, err := sysfs.ParseRate(v); err == nil {
				if p.observed && r.Gbps != p.rateGbps {
					m.rateChanged = true
				}
				p.rateGbps = r.Gbps
			}
		}
	}
	wasActive := p.active()
	if !p.observed || o != p.obs {
		m.viewChanged = true
	}
	p.obs, p.observed = o, true
	if p.active() != wasActive {
		m.activeChanged = true
	}
}

func (m *Monitor) noteUnreadable(p *portPlan, errs ...error) {
	if m.unreadable[p.dev.Name] {
		return
	}
	m.unreadable[p.dev.Name] = true
	err := errors.Join(errs...)
	if errors.Is(err, reader.ErrStuck) {
		return // reported as its own event
	}
	level := slog.LevelWarn
	if errors.Is(err, fs.ErrNotExist) {
		level = slog.LevelInfo // vanishing mid-read: disappearance logic decides
	}
	m.log.Log(context.Background(), level, "cannot read port state; keeping its last known state until it reads again",
		"device", p.dev.Name, "port", p.port.Num, "err", err)
}

// fileOwner returns the port whose plan reads f.
func (m *Monitor) fileOwner(f *reader.File) (dev string, port int, ll string) {
	for _, p := range m.ports {
		if p.state == f || p.phys == f || p.rate == f || p.oper == f || slices.ContainsFunc(p.counters, func(c counterRead) bool { return c.file == f }) {
			return p.dev.Name, p.port.Num, p.port.LinkLayer
		}
	}
	return "", 0, ""
}

// readRecoveredSpec clears the read-stuck event of path: same check,
// device, port and file, so a consumer keyed on them sees the condition
// end. why is a format with one %s, the path.
func (m *Monitor) readRecoveredSpec(path string, ref fileRef, why string) event.Spec {
	return event.Spec{
		Kind: event.KindReadRecovered, CheckName: checks.DegradationCheckFor(ref.linkLayer), IsHealthy: true, Device: ref.dev, Port: ref.port,
		Message: fmt.Sprintf("Port %s port %d: ", ref.dev, ref.port) + fmt.Sprintf(why, path),
		// The file's path is the condition's error code: a clear by
		// entity and error code (NVSentinel, DESIGN.md difference 13)
		// removes this condition, never a latched breach of the port.
		ErrorCode: []string{path},
		Metadata:  map[string]string{"file": path},
	}
}

func (m *Monitor) stuckSpec(f *reader.File) event.Spec {
	dev, port, ll := m.fileOwner(f)
	what := "the file is skipped until the read returns"
	if f.IsSource() {
		// A driver call (ETHTOOL_GSTATS), named "ethtool:<netdev>".
		what = "the driver statistics are skipped until the call returns"
	}
	return event.Spec{
		Kind: event.KindReadStuck, CheckName: checks.DegradationCheckFor(ll), Device: dev, Port: port, ErrorCode: []string{f.Path},
		Message: fmt.Sprintf("Port %s port %d: reading %s did not return within %v; %s and the rest of the node stays monitored. A read that hangs usually means the HCA firmware stopped answering: check dmesg for mlx5_core command timeouts",
			dev, port, f.Path, m.cfg.ReadTimeout, what),
		Metadata: map[string]string{"file": f.Path, "timeout": m.cfg.ReadTimeout.String()},
	}
}

// Reconfigure applies a validated configuration between cycles. Counter
// snapshots, windows and latches of unchanged counters carry over; a
// removed or disabled counter's latched breach is resolved with an event
// that says why.
func (m *Monitor) Reconfigure(cfg *config.Config, now time.Time) []event.Spec {
	all, defs := counterTables(cfg)
	specs := m.eval.Reconcile(m.mem.Counters, all)
	rediscover := cfg.Paths != m.cfg.Paths || cfg.ExclusionRaw != m.cfg.ExclusionRaw ||
		cfg.InclusionRaw != m.cfg.InclusionRaw || cfg.TopologySource != m.cfg.TopologySource ||
		cfg.MetadataPath != m.cfg.MetadataPath
	if cfg.ReadTimeout != m.cfg.ReadTimeout || cfg.MaxStuckReads != m.cfg.MaxStuckReads || cfg.Paths.SysfsRoot != m.cfg.Paths.SysfsRoot ||
		cfg.ParkReprobe != m.cfg.ParkReprobe {
		// In place: a new reader would forget the reads still hung in the
		// kernel, read those files again and strand one more thread on
		// each at every reload.
		m.rd.SetOptions(readerOptions(cfg))
	}
	if cfg.PollInterval != m.cfg.PollInterval {
		m.nextStatePoll = now // the new cadence starts at the next wake
	}
	m.cfg = cfg
	m.defs = defs
	// A reload gives every check disabled by a panic another chance.
	m.guard.reset()
	if rediscover {
		if err := m.Discover(); err != nil {
			m.log.Error("rediscovery after reload failed; keeping the previous device list", "err", err)
			m.buildPlan()
		}
	} else {
		m.buildPlan()
	}
	return specs
}

// activeOrUnread counts a port whose state was never read (a hung or
// garbled file) as active for card homogeneity: its unreadability is
// reported on its own, and a file that cannot be read is not evidence of a
// failed port (DESIGN.md difference 3).
func (p *portPlan) activeOrUnread() bool { return !p.observed || p.active() }

// active reports whether the port was last seen ACTIVE/LinkUp.
func (p *portPlan) active() bool {
	return p.observed && p.obs.State.ID == sysfs.StateActive && p.obs.Phys.ID == sysfs.PhysLinkUp
}
