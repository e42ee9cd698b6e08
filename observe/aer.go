package observe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/aerfile"
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
	obs   []*AERFunction
	files []*reader.File
	next  time.Time
	stuck []*reader.File
	// logged holds what was logged once: absent AER per function,
	// malformed content and read errors per file.
	logged map[string]bool
}

type aerFn struct {
	fn    *AERFunction
	files [aerfile.NumClasses]*reader.File // nil: absent when planned
	// root are a root port's aer_rootport_total_err_* files: what the
	// root port received from everything below it. They are shown on
	// /metrics but not judged: the functions below report the same errors
	// through their own counters, and a non-NIC device below the root
	// port (a GPU) must not raise a NIC event.
	root [aerfile.NumClasses]*reader.File
}

// planAER rebuilds the AER plan from the devices (buildPlan calls it).
func (o *Observer) planAER() {
	if o.aer == nil {
		o.aer = &aerPlan{logged: map[string]bool{}}
	}
	p := o.aer
	for _, f := range p.files {
		f.Close()
	}
	p.fns, p.obs, p.files = p.fns[:0], p.obs[:0], p.files[:0]
	if !o.cfg.AER {
		return
	}
	byAddr := map[string]*aerFn{}
	nics := map[string][]string{}
	for _, d := range o.devices {
		if !d.Monitored() {
			continue
		}
		for i, hop := range topology.PCIPath(d, o.cfg.Paths.SysfsRoot) {
			a := byAddr[hop.Address]
			if a == nil {
				a = o.newAERFn(hop, i == 0, d)
				byAddr[hop.Address] = a
				p.fns = append(p.fns, a)
				p.obs = append(p.obs, a.fn)
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
}

// newAERFn plans one function's files; a function without them (no AER
// statistics in the kernel, AER disabled by firmware) is logged once and
// skipped: fail open.
func (o *Observer) newAERFn(hop topology.PCIHop, own bool, d *topology.Device) *aerFn {
	kind := "switch port"
	switch {
	case own:
		kind = "NIC function"
	case hop.RootPort:
		kind = "root port"
	}
	a := &aerFn{fn: &AERFunction{Address: hop.Address, Label: kind, Check: event.DegradationCheckFor(d.LinkLayer())}}
	for cl, name := range aerfile.Files {
		path := filepath.Join(hop.Dir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		a.files[cl] = reader.NewFileSize(path, aerFileMax)
		a.fn.Files[cl] = true
		o.aer.files = append(o.aer.files, a.files[cl])
	}
	for cl, name := range aerfile.RootFiles {
		path := filepath.Join(hop.Dir, name)
		if _, err := os.Stat(path); err != nil || !hop.RootPort {
			continue
		}
		a.root[cl] = reader.NewFile(path)
		o.aer.files = append(o.aer.files, a.root[cl])
	}
	if a.files == [aerfile.NumClasses]*reader.File{} && !o.aer.logged[hop.Address] {
		o.aer.logged[hop.Address] = true
		o.log.Info("no PCIe AER counters on this PCI function; its AER errors are not monitored",
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

// aerCycle reads and parses the AER counters when their cadence is due.
func (o *Observer) aerCycle(now time.Time) bool {
	p := o.aer
	if p == nil || len(p.fns) == 0 || now.Before(p.next) {
		return false
	}
	p.next = now.Add(aerInterval)
	p.stuck = o.rd.Read(p.files, p.stuck[:0])
	for _, a := range p.fns {
		for cl, f := range a.root {
			if f != nil && f.Err == nil {
				total, ok := aerfile.ParseTotal(f.Value())
				if total != a.fn.RootTotal[cl] || ok != a.fn.RootOK[cl] {
					o.viewChanged = true // the snapshot shows it
				}
				a.fn.RootTotal[cl], a.fn.RootOK[cl] = total, ok
			}
		}
		a.fn.Readable = o.aerReading(a)
	}
	return true
}

// aerReading parses a function's files into its reading.
func (o *Observer) aerReading(a *aerFn) bool {
	r := &a.fn.Reading
	for cl, f := range a.files {
		r.Present[cl] = false
		if f == nil {
			continue
		}
		if f.Err != nil {
			o.aerLogOnce(f.Path, "cannot read a PCIe AER counter file; it is skipped until it reads again", f.Err, "")
			continue
		}
		bad, why := aerfile.Parse(f.Value(), aerfile.Class(cl), &r.Counts[cl])
		if bad > 0 {
			o.aerLogOnce(f.Path+"|malformed", "malformed lines in a PCIe AER counter file are ignored", nil, why)
		}
		r.Present[cl] = true
	}
	return r.Any()
}

func (o *Observer) aerLogOnce(key, msg string, err error, reason string) {
	if o.aer.logged[key] {
		return
	}
	o.aer.logged[key] = true
	file, _, _ := strings.Cut(key, "|")
	if errors.Is(err, reader.ErrStuck) {
		reason = fmt.Sprintf("the read did not return within %v", o.cfg.ReadTimeout)
	} else if err != nil {
		reason = err.Error()
	}
	o.log.Warn(msg, "file", file, "reason", reason,
		"fix", "check the kernel log for PCIe errors on this function; the file's format is the kernel's (NAME value lines, TOTAL_ERR_* last)")
}

// aerWake is the earlier of w and the next AER read.
func (o *Observer) aerWake(w time.Time) time.Time {
	if o.aer != nil && len(o.aer.fns) > 0 && o.aer.next.Before(w) {
		return o.aer.next
	}
	return w
}

// closeAER releases the AER plan's kept-open descriptors.
func (o *Observer) closeAER() {
	if o.aer == nil {
		return
	}
	for _, f := range o.aer.files {
		f.Close()
	}
}
