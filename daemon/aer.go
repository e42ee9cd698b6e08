package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/reader"
)

// aerInterval is the cadence of the PCIe AER reads. AER counters move on
// rare, discrete events (a replayed packet, a completion timeout), not
// continuously like link counters; the judgement is edge-triggered and the
// correctable rate is a per-minute average over minutes, so 5 s loses
// nothing an operator acts on, reports a fatal error within seconds, and
// costs a fifth of a 1 s read of these multi-line files (every function
// on a NIC's path, 3 files each).
const aerInterval = 5 * time.Second

// aerFileMax bounds one AER file: 27 names of at most 16 characters plus a
// 20-digit count each is under 1 KiB.
const aerFileMax = 1024

// aerPlan is the AER read plan: each PCI function on the path of a
// monitored NIC once, however many NICs sit below it.
type aerPlan struct {
	fns   []*aerFn
	files []*reader.File
	next  time.Time
	stuck []*reader.File
	// logged holds what was logged once: absent AER per function,
	// malformed content and read errors per file.
	logged  map[string]bool
	reading aer.Reading
}

type aerFn struct {
	fn    aer.Function
	files [aer.NumClasses]*reader.File // nil: absent when planned
	// root are a root port's aer_rootport_total_err_* files and rootTotal
	// their last values: what the root port received from everything
	// below it. They are shown on /metrics but not judged: the functions
	// below report the same errors through their own counters, and a
	// non-NIC device below the root port (a GPU) must not raise a NIC
	// event.
	root      [aer.NumClasses]*reader.File
	rootTotal [aer.NumClasses]uint64
	rootOK    [aer.NumClasses]bool
}

// planAER rebuilds the AER plan from the devices (buildPlan calls it).
func (m *Monitor) planAER() {
	if m.aer == nil {
		m.aer = &aerPlan{logged: map[string]bool{}}
	}
	p := m.aer
	for _, f := range p.files {
		f.Close()
	}
	p.fns, p.files = p.fns[:0], p.files[:0]
	if !m.cfg.PCIeAER.Enabled {
		m.pendingSpecs = append(m.pendingSpecs, m.clearUnplannedAER(nil)...)
		return
	}
	byAddr := map[string]*aerFn{}
	nics := map[string][]string{}
	for _, d := range m.devices {
		if !d.Monitored() {
			continue
		}
		for i, hop := range topology.PCIPath(d, m.cfg.Paths.SysfsRoot) {
			a := byAddr[hop.Address]
			if a == nil {
				a = m.newAERFn(hop, i == 0, d)
				byAddr[hop.Address] = a
				p.fns = append(p.fns, a)
			}
			nics[hop.Address] = append(nics[hop.Address], d.Name)
			for _, port := range d.Ports {
				a.fn.Ports = append(a.fn.Ports, event.PortRef{Device: d.Name, Port: port.Num})
			}
		}
	}
	for _, a := range p.fns {
		a.fn.Label = aerLabel(a.fn.Label, nics[a.fn.Address])
	}
	m.pendingSpecs = append(m.pendingSpecs, m.clearUnplannedAER(byAddr)...)
}

// newAERFn plans one function's files; a function without them (no AER
// statistics in the kernel, AER disabled by firmware) is logged once and
// skipped: fail open.
func (m *Monitor) newAERFn(hop topology.PCIHop, own bool, d *topology.Device) *aerFn {
	kind := "switch port"
	switch {
	case own:
		kind = "NIC function"
	case hop.RootPort:
		kind = "root port"
	}
	a := &aerFn{fn: aer.Function{Address: hop.Address, Label: kind, Check: checks.DegradationCheckFor(d.LinkLayer())}}
	for cl, name := range aer.Files {
		path := filepath.Join(hop.Dir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		a.files[cl] = reader.NewFileSize(path, aerFileMax)
		m.aer.files = append(m.aer.files, a.files[cl])
	}
	for cl, name := range aer.RootFiles {
		path := filepath.Join(hop.Dir, name)
		if _, err := os.Stat(path); err != nil || !hop.RootPort {
			continue
		}
		a.root[cl] = reader.NewFile(path)
		m.aer.files = append(m.aer.files, a.root[cl])
	}
	if a.files == [aer.NumClasses]*reader.File{} && !m.aer.logged[hop.Address] {
		m.aer.logged[hop.Address] = true
		m.log.Info("no PCIe AER counters on this PCI function; its AER errors are not monitored",
			"pci", hop.Address, "function", kind, "nic", d.Name, "dir", hop.Dir,
			"fix", "expected when the kernel lacks AER statistics (before 5.7) or firmware keeps AER (firmware-first); enable OS-native AER in the BIOS to monitor it")
	}
	return a
}

func aerLabel(kind string, nics []string) string {
	sort.Slice(nics, func(i, j int) bool { return nics[i] < nics[j] })
	if kind == "NIC function" {
		return kind + " " + strings.Join(nics, ", ")
	}
	return kind + " above " + strings.Join(nics, ", ")
}

// clearUnplannedAER clears the raised conditions of functions no longer
// on a monitored NIC's path (the NIC was removed or excluded, AER was
// switched off), so no condition outlives what it is about.
func (m *Monitor) clearUnplannedAER(planned map[string]*aerFn) []event.Spec {
	var out []event.Spec
	why := "no monitored NIC below it any more"
	if !m.cfg.PCIeAER.Enabled {
		why = "PCIe AER monitoring was switched off (pcieAER.enabled = false)"
	}
	for addr, fm := range m.mem.AER.Functions {
		if planned[addr] != nil || len(fm.Raised) == 0 {
			continue
		}
		f := aer.Function{Address: addr, Label: "PCI function"}
		out = append(out, f.ClearAll(m.mem.AER, why)...)
	}
	return out
}

// aerCycle reads and judges the AER counters when their cadence is due.
func (m *Monitor) aerCycle(now time.Time, specs *[]event.Spec, changed *bool) {
	p := m.aer
	if p == nil || len(p.fns) == 0 || now.Before(p.next) {
		return
	}
	p.next = now.Add(aerInterval)
	p.stuck = m.rd.Read(p.files, p.stuck[:0])
	th := aer.Thresholds{CorrectablePerMinute: m.cfg.PCIeAER.CorrectablePerMinute,
		Window: m.cfg.PCIeAER.Window, NonFatalQuiet: m.cfg.PCIeAER.NonFatalQuiet}
	for _, a := range p.fns {
		for cl, f := range a.root {
			if f != nil && f.Err == nil {
				total, ok := aer.ParseTotal(f.Value())
				if total != a.rootTotal[cl] || ok != a.rootOK[cl] {
					m.viewChanged = true // the snapshot shows it
				}
				a.rootTotal[cl], a.rootOK[cl] = total, ok
			}
		}
		if !m.aerReading(a) {
			continue
		}
		ss, ch := a.fn.Judge(m.mem.AER, &p.reading, now, th)
		*specs = append(*specs, ss...)
		*changed = *changed || ch
		m.viewChanged = m.viewChanged || ch // the totals the snapshot shows
	}
}

// aerReading parses a function's files into the plan's scratch reading.
func (m *Monitor) aerReading(a *aerFn) bool {
	r := &m.aer.reading
	for cl, f := range a.files {
		r.Present[cl] = false
		if f == nil {
			continue
		}
		if f.Err != nil {
			m.aerLogOnce(f.Path, "cannot read a PCIe AER counter file; it is skipped until it reads again", f.Err, "")
			continue
		}
		bad, why := aer.Parse(f.Value(), aer.Class(cl), &r.Counts[cl])
		if bad > 0 {
			m.aerLogOnce(f.Path+"|malformed", "malformed lines in a PCIe AER counter file are ignored", nil, why)
		}
		r.Present[cl] = true
	}
	return r.Any()
}

func (m *Monitor) aerLogOnce(key, msg string, err error, reason string) {
	if m.aer.logged[key] {
		return
	}
	m.aer.logged[key] = true
	file, _, _ := strings.Cut(key, "|")
	if errors.Is(err, reader.ErrStuck) {
		reason = fmt.Sprintf("the read did not return within %v", m.cfg.ReadTimeout)
	} else if err != nil {
		reason = err.Error()
	}
	m.log.Warn(msg, "file", file, "reason", reason,
		"fix", "check the kernel log for PCIe errors on this function; the file's format is the kernel's (NAME value lines, TOTAL_ERR_* last)")
}

// aerWake is the earlier of w and the next AER read.
func (m *Monitor) aerWake(w time.Time) time.Time {
	if m.aer != nil && len(m.aer.fns) > 0 && m.aer.next.Before(w) {
		return m.aer.next
	}
	return w
}

// closeAER releases the AER plan's kept-open descriptors.
func (m *Monitor) closeAER() {
	if m.aer == nil {
		return
	}
	for _, f := range m.aer.files {
		f.Close()
	}
}

// acknowledgeAER clears the uncorrectable AER conditions of every
// function on the path of device (D-Bus AcknowledgeReset with counter
// "pcie_aer").
func (m *Monitor) acknowledgeAER(device, who string) []event.Spec {
	if m.aer == nil {
		return nil
	}
	var out []event.Spec
	for _, a := range m.aer.fns {
		for _, pr := range a.fn.Ports {
			if pr.Device == device {
				out = append(out, a.fn.Acknowledge(m.mem.AER, who)...)
				break
			}
		}
	}
	return out
}

// aerTotals is what /metrics shows of the AER memory: every function on
// the current plan with the classes it has files for.
func (m *Monitor) aerTotals() []health.AERTotal {
	if m.aer == nil {
		return nil
	}
	var out []health.AERTotal
	for _, a := range m.aer.fns {
		fm := m.mem.AER.Functions[a.fn.Address] // nil before the first read
		for cl := range a.files {
			sev := aer.Class(cl).String()
			if a.files[cl] != nil && fm != nil {
				out = append(out, health.AERTotal{PCI: a.fn.Address, Severity: sev, Total: fm.Totals[cl]})
			}
			if a.rootOK[cl] {
				out = append(out, health.AERTotal{PCI: a.fn.Address, Severity: sev, Total: a.rootTotal[cl], RootPort: true})
			}
		}
	}
	return out
}

// AERAckCounter is the counter name AcknowledgeReset takes for the PCIe
// AER conditions on a port's path (not a counter-table name).
const AERAckCounter = "pcie_aer"

// acknowledge is AcknowledgeReset: "kernel_log" or a kernel-log
// pattern's name clears kernel-log conditions (daemon/kernellog.go),
// counter "pcie_aer" the uncorrectable AER conditions on the port's path,
// anything else goes to the counter table.
func (d *Daemon) acknowledge(device string, port int, counter string, now time.Time, who string) ([]event.Spec, error) {
	if specs, ok, err := d.acknowledgeKernelLog(device, port, counter, who); ok {
		return specs, err
	}
	if counter != AERAckCounter {
		return d.mon.eval.Acknowledge(d.mon.mem.Counters, device, port, counter, now, who)
	}
	specs := d.mon.acknowledgeAER(device, who)
	if len(specs) == 0 {
		return nil, fmt.Errorf("acknowledge %s port %d: %w: no PCIe AER fatal or non-fatal condition on its path", device, port, counters.ErrNotLatched)
	}
	return specs, nil
}
