package observe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/reader"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// portPlan is one monitored port's part of the read plan and what the
// last reads of it said.
type portPlan struct {
	Port
	state    *reader.File
	phys     *reader.File
	rate     *reader.File
	oper     *reader.File
	counters []counterRead
	phyAvail [2][]string // driver statistics present, missing (phy.go)
	rateRaw  [64]byte
	rateLen  int
	operRaw  [32]byte
	operLen  int
}

type counterRead struct {
	file *reader.File
	rows []int // indexes into Config.Counters
	// last holds the previous reading; seen says it is valid. A fresh plan
	// (start, reload, rediscovery) starts unseen, so every row is
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

func (o *Observer) closePlan() {
	for _, f := range o.files {
		f.Close()
	}
	o.files = o.files[:0]
	o.state.reset()
	o.counter.reset()
	o.ports = o.ports[:0]
}

// buildPlan lists every file a steady poll reads. VFs, management and
// excluded devices get no entry: after discovery they cost nothing.
func (o *Observer) buildPlan() {
	o.viewChanged = true
	old := map[event.PortRef]*portPlan{}
	for _, p := range o.ports {
		old[p.Key()] = p
	}
	o.closePlan()
	clear(o.statsStale) // the sources were just closed; the new ones are unseen
	o.netdevsAbsent = 0
	for _, d := range o.devices {
		if !d.Monitored() {
			continue
		}
		var present, missing []string
		for i := range d.Ports {
			port := &d.Ports[i]
			pp := &portPlan{Port: Port{Device: d, Port: port, NetDev: d.NetDevFor(port.Num)}}
			if p := old[pp.Key()]; p != nil {
				pp.Link, pp.Operstate, pp.Observed = p.Link, p.Operstate, p.Observed
				pp.RateGbps, pp.RateText = p.RateGbps, p.RateText
			} else if r, err := sysfs.ParseRate([]byte(port.Rate)); err == nil {
				// Discovery read the rate: the views show it before the
				// first poll, as they show discovery's text.
				pp.RateGbps = r.Gbps
			}
			ow := owner{dev: d.Name, port: port.Num, linkLayer: port.LinkLayer}
			pp.state = o.addFile(port.Dir+"/state", &o.state, ow)
			pp.phys = o.addFile(port.Dir+"/phys_state", &o.state, ow)
			pp.rate = o.addFile(port.Dir+"/rate", &o.state, ow)
			if port.LinkLayer == topology.LinkLayerEthernet && pp.NetDev != "" {
				pp.oper = o.planOperstate(pp, ow)
			}
			if o.degradationEnabled(port.LinkLayer) {
				o.b.Run("plan", degradationChecks, func() {
					o.b.Enter(event.DegradationCheckFor(port.LinkLayer))
					p, ms := Availability(port.Dir, o.cfg.Paths.ClassNet, pp.NetDev, o.applicable(port.LinkLayer))
					o.planCounters(pp, ms, ow)
					present, missing = append(present, p...), append(missing, ms...)
					present, missing = append(present, pp.phyAvail[0]...), append(missing, pp.phyAvail[1]...)
				})
			}
			pp.Samples = make([]Sample, len(pp.counters))
			for i, cr := range pp.counters {
				pp.Samples[i] = Sample{Path: cr.file.Path, Rows: cr.rows, Err: errNotSampled}
			}
			o.ports = append(o.ports, pp)
		}
		if len(o.cfg.Counters) > 0 {
			o.logAvailability(d.Name, uniq(present), uniq(missing))
		}
	}
	clear(o.planned)
	for _, f := range o.files {
		o.planned[f.Path] = true
	}
	o.planGen++
	if o.b.Failed(event.PCIeAERCheck) {
		o.closeAER()
		if o.aer != nil {
			o.aer.fns = o.aer.fns[:0]
		}
		return
	}
	o.b.Run("plan", aerChecks, func() {
		o.b.Enter(event.PCIeAERCheck)
		o.planAER()
	})
}

// addFile adds a file to the plan and to one of its cadences.
func (o *Observer) addFile(path string, c *cadence, ow owner) *reader.File {
	f := reader.NewFile(path)
	o.files = append(o.files, f)
	c.add(f, ow)
	return f
}

// planCounters adds the port's counter files, one read per file however
// many rows share it. A path that resolves outside the device's
// directory through a symlink is not read; missing files are not planned
// (seed 7.1: they fail open, logged once with the device's availability).
func (o *Observer) planCounters(pp *portPlan, missing []string, ow owner) {
	port := pp.Port.Port
	byFile := map[string]int{}
	var phyRows []int
	for i, c := range o.cfg.Counters {
		if !c.AppliesTo(port.LinkLayer) {
			continue
		}
		if c.Path.Ethtool() {
			phyRows = append(phyRows, i)
			continue
		}
		path := c.Path.File(port.Dir, o.cfg.Paths.ClassNet, pp.NetDev)
		if path == "" || slices.Contains(missing, c.Name) {
			continue
		}
		resolved, ok := confineCounterPath(c.Path, port.Dir, o.cfg.Paths.ClassNet, pp.NetDev, path)
		if !ok {
			o.log.Warn("counter file resolves outside its device directory through a symlink; not read",
				"device", pp.Device.Name, "port", port.Num, "counter", c.Name, "path", path, "resolves_to", resolved)
			continue
		}
		if j, ok := byFile[path]; ok {
			pp.counters[j].rows = append(pp.counters[j].rows, i)
			continue
		}
		byFile[path] = len(pp.counters)
		f := o.addFile(path, &o.counter, ow)
		if c.Path.Netdev() {
			f.SetKeepOpen(o.netdevOnSysfs(pp))
		}
		pp.counters = append(pp.counters, counterRead{file: f, rows: []int{i}})
	}
	if len(phyRows) > 0 {
		pp.phyAvail[0], pp.phyAvail[1] = o.planPHY(pp, phyRows, ow)
	}
}

// applicable lists the enabled rows of a link layer.
func (o *Observer) applicable(linkLayer string) []Counter {
	var out []Counter
	for _, c := range o.cfg.Counters {
		if c.AppliesTo(linkLayer) {
			out = append(out, c)
		}
	}
	return out
}

// logAvailability logs a device's counter availability once (seed 7.1), and
// again only when it changes (a reload enabling other counters, a firmware
// update): at start and when a device appears, not at every plan rebuild.
// Missing counters are a warning (seed 10.5: "log warning, skip counter");
// they then fail open silently.
func (o *Observer) logAvailability(dev string, present, missing []string) {
	key := strings.Join(present, ",") + "|" + strings.Join(missing, ",")
	if o.availLogged[dev] == key {
		return
	}
	o.availLogged[dev] = key
	if len(missing) == 0 {
		o.log.Info("counter availability", "device", dev, "available", present, "missing", missing)
		return
	}
	o.log.Warn("counter files missing; those counters are skipped on this device (not read) until a reload or rediscovery looks for them again", "device", dev,
		"missing", missing, "available", present,
		"fix", "expected for counters this NIC generation or firmware lacks; set enabled = false for them under [[counterDetection.counters]] if this is permanent (roce: rows are the RoCE classes' signals, which older firmware and the inbox driver partly lack: the classes judge with the rest, or set [roce] enabled = false)")
}

func uniq(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

// degradationEnabled reports whether the counter check of a link layer
// reads: counter detection on, the check switched on and not disabled by
// a panic.
func (o *Observer) degradationEnabled(ll string) bool {
	c := event.DegradationCheckFor(ll)
	return len(o.cfg.Counters) > 0 && o.cfg.Checks[c] && !o.b.Failed(c)
}

// Availability sorts the rows of one port into those whose file exists and
// those whose file does not. The observer logs the result once per device
// at start and when a device appears, and never again while polling (seed
// 7.1: missing counters fail open and are not re-logged). A netdev row of
// a port without a netdev (iface == "") counts as missing. Driver
// statistics are left out of both lists: the driver is asked for their
// names when the plan is built (phy.go).
func Availability(portDir, netClassDir, iface string, rows []Counter) (present, missing []string) {
	for _, c := range rows {
		if c.Path.Ethtool() {
			continue
		}
		f := c.Path.File(portDir, netClassDir, iface)
		if f == "" {
			missing = append(missing, c.Name)
			continue
		}
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, c.Name)
			continue
		}
		present = append(present, c.Name)
	}
	return present, missing
}

// confineCounterPath resolves the symlinks of a counter file's path when
// the read plan is built and checks that the file is still inside the
// directory the configured path is relative to (the port's, or the
// netdev's), itself resolved. The plan keeps reading the class path (the
// kernel's own symlinks, which every message and metric names). The
// configuration check is lexical; without this a symlink planted in the
// sysfs tree would make the daemon read any file it can, and publish its
// content as a counter value. A file that does not exist yet keeps its
// lexical path (it is missing, and read as such); ok is false when the
// file resolves outside.
func confineCounterPath(p CounterPath, portDir, netClassDir, netdev, path string) (resolved string, ok bool) {
	base := portDir
	if p.Netdev() {
		base = filepath.Join(netClassDir, netdev)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path, errors.Is(err, fs.ErrNotExist)
	}
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return path, false
	}
	rel, err := filepath.Rel(realBase, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return real, false
	}
	return real, true
}
