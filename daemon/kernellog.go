package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// The kernel log's pace on the poll loop. A cycle judges at most
// kernelLogBatch records (the rest wait in the reader's queue for the
// next cycle), so a storm of kernel messages spreads over cycles instead
// of lengthening one; the quiet-period clears and count updates are
// looked at once a second.
const (
	kernelLogBatch = 1024
	kernelLogTick  = time.Second
)

// kernelLogChecks is what the check guard (guard.go) names the kernel-log
// step after: a panic in it disables this check alone.
var kernelLogChecks = []string{kernellog.CheckName}

// kernelLog wires the kernel-log check into the monitor: the reader on
// its own goroutine (topology/kmsg), the judgement (checks/kernellog),
// and the map of NIC functions a record is attributed with.
type kernelLog struct {
	src   *kmsg.Source
	path  string
	cfg   config.KernelLogConfig
	check *kernellog.Check
	buf   []kmsg.Record
	next  time.Time
	// devs is rebuilt from discovery after each plan (planKernelLog).
	devs *kernellog.Devices
	// seen are the totals last published, so the snapshot is rebuilt only
	// when they move.
	seen   kmsg.Stats
	judged uint64
	totals *health.KernelLogTotals
}

func kernelLogOn(cfg *config.Config) bool {
	return cfg.KernelLog.Enabled && cfg.Checks[kernellog.CheckName]
}

// startKernelLog starts reading the kernel log (the daemon's Run; a
// one-shot check never reads it). The cursor of the same boot resumes.
//
// Conditions remembered from before the start are settled first: all of
// them cleared when the check is now off, those of patterns removed or
// changed while the daemon was down reconciled (their events go out with
// the first poll).
func (m *Monitor) startKernelLog(bootID string) {
	m.mem.KernelLog.ForBoot(bootID)
	tb, err := kernellog.Compile(m.cfg.KernelLog.Patterns)
	if err != nil {
		m.log.Error("kernel log patterns do not compile; the kernel-log check is off", "err", err)
		return
	}
	check := kernellog.New(tb, kernellog.Options{MatchUserSpace: m.cfg.KernelLog.MatchUserSpace, Log: m.log})
	if !kernelLogOn(m.cfg) {
		m.pendingSpecs = append(m.pendingSpecs, check.ClearAll(m.mem.KernelLog,
			"the kernel-log check is switched off (kernelLog.enabled = false, or not in checks)")...)
		return
	}
	m.pendingSpecs = append(m.pendingSpecs, check.Reconcile(m.mem.KernelLog, time.Now())...)
	kl := &kernelLog{cfg: m.cfg.KernelLog, check: check}
	kl.open(m)
	m.kl = kl
}

func (kl *kernelLog) open(m *Monitor) {
	kl.path = filepath.Join(m.cfg.Paths.DevRoot, "kmsg")
	mem := m.mem.KernelLog
	kl.src = kmsg.Open(kmsg.Options{Path: kl.path, Resume: mem.HasSeq, After: mem.Seq, Log: m.log})
	kl.seen = kmsg.Stats{}
}

// closeKernelLog stops the reader.
func (m *Monitor) closeKernelLog() {
	if m.kl != nil && m.kl.src != nil {
		m.kl.src.Close()
	}
}

// planKernelLog forgets the function map: the plan changed.
func (m *Monitor) planKernelLog() {
	if m.kl != nil {
		m.kl.devs = nil
	}
}

// reconfigureKernelLog applies [kernelLog] and --checks after a reload:
// switched off clears every condition; a new devRoot reopens the reader
// at the cursor; changed patterns settle their conditions.
func (m *Monitor) reconfigureKernelLog(bootID string) []event.Spec {
	kl := m.kl
	switch {
	case kl == nil && kernelLogOn(m.cfg):
		m.startKernelLog(bootID)
		return nil
	case kl == nil:
		return nil
	case !kernelLogOn(m.cfg):
		kl.src.Close()
		m.kl = nil
		return kl.check.ClearAll(m.mem.KernelLog, "the kernel-log check was switched off (kernelLog.enabled = false, or not in checks)")
	}
	if kl.path != filepath.Join(m.cfg.Paths.DevRoot, "kmsg") {
		kl.src.Close()
		kl.open(m)
	}
	if slices.EqualFunc(kl.cfg.Patterns, m.cfg.KernelLog.Patterns, func(a, b kernellog.Pattern) bool { return a == b }) &&
		kl.cfg.MatchUserSpace == m.cfg.KernelLog.MatchUserSpace {
		return nil
	}
	tb, err := kernellog.Compile(m.cfg.KernelLog.Patterns)
	if err != nil {
		m.log.Error("kernel log patterns do not compile; the previous ones stay", "err", err)
		return nil
	}
	kl.cfg = m.cfg.KernelLog
	kl.check.SetTable(tb, kernellog.Options{MatchUserSpace: kl.cfg.MatchUserSpace})
	return kl.check.Reconcile(m.mem.KernelLog, time.Now())
}

// kernelLogCycle judges what the reader queued since the last cycle, and
// once a second clears quiet conditions and reports grown counts.
func (m *Monitor) kernelLogCycle(now time.Time, specs *[]event.Spec, changed *bool) {
	kl := m.kl
	if kl == nil {
		return
	}
	kl.buf = kl.src.Drain(kl.buf[:0], kernelLogBatch)
	if len(kl.buf) > 0 {
		ss, ch := kl.check.Judge(m.mem.KernelLog, kl.buf, m.kernelLogDevices(), now)
		*specs = append(*specs, ss...)
		*changed = *changed || ch
		kl.judged += uint64(len(kl.buf))
		clear(kl.buf) // the records' strings are not kept alive by the buffer
		m.viewChanged = true
	}
	for _, l := range kl.src.TakeLosses() {
		why := "records were gone when the reader started (the ring wrapped while the daemon was down)"
		if l.Overrun {
			why = "the kernel's ring buffer overwrote them before they were read (a kernel message storm)"
		}
		m.log.Warn("kernel log records lost; the kernel-log check did not see them", "lost", l.N(), "first_seq", l.From,
			"last_seq", l.To, "why", why, "file", kl.path)
	}
	if st := kl.src.Stats(); st != kl.seen {
		kl.seen, kl.totals, m.viewChanged = st, nil, true
	}
	if now.Before(kl.next) {
		return
	}
	kl.next = now.Add(kernelLogTick)
	ss, ch := kl.check.Tick(m.mem.KernelLog, now)
	*specs = append(*specs, ss...)
	*changed = *changed || ch
}

// kernelLogDevices is the map a record is attributed with: the monitored
// functions with their ports (a NIC missing from the last enumeration
// keeps its last known ports, as every view does), every function
// discovery saw, their VFs, and their netdev and RDMA device names.
func (m *Monitor) kernelLogDevices() *kernellog.Devices {
	if m.kl.devs != nil {
		return m.kl.devs
	}
	d := &kernellog.Devices{Monitored: map[string]kernellog.Function{}, Known: map[string]bool{}, Names: map[string]string{}}
	for _, dev := range m.devices {
		pci := strings.ToLower(dev.PCIAddress)
		if pci == "" {
			continue
		}
		d.Known[pci] = true
		d.Names[dev.Name] = pci
		for _, n := range dev.NetDevs {
			d.Names[n] = pci
		}
		for _, vf := range virtfns(dev.PCIDir) {
			d.Known[vf] = true
		}
	}
	for _, p := range m.ports {
		pci := strings.ToLower(p.dev.PCIAddress)
		if pci == "" {
			continue
		}
		f := d.Monitored[pci]
		f.PCI, f.Device = pci, p.dev.Name
		f.Ports = append(f.Ports, event.PortRef{Device: p.dev.Name, Port: p.port.Num})
		d.Monitored[pci] = f
	}
	for _, dev := range m.mem.Ports.KnownDevices {
		pci := strings.ToLower(m.mem.Ports.DeviceAddrs[dev])
		if _, ok := d.Monitored[pci]; ok || pci == "" {
			continue
		}
		f := kernellog.Function{PCI: pci, Device: dev}
		for _, ps := range m.missingPorts(dev) {
			f.Ports = append(f.Ports, event.PortRef{Device: dev, Port: ps.Port})
		}
		d.Monitored[pci], d.Known[pci], d.Names[dev] = f, true, pci
	}
	m.kl.devs = d
	return d
}

// virtfns lists a PF's VFs (its virtfnN links), which discovery sees only
// once they have an RDMA device: a VF that failed to probe is still not
// one of the monitored NICs.
func virtfns(pciDir string) []string {
	if pciDir == "" {
		return nil
	}
	links, _ := filepath.Glob(filepath.Join(pciDir, "virtfn*"))
	var out []string
	for _, l := range links {
		if t, err := os.Readlink(l); err == nil {
			out = append(out, strings.ToLower(filepath.Base(t)))
		}
	}
	return out
}

// kernelLogTotals is what the snapshot shows of the kernel log (nil when
// the check is off), rebuilt only when it moved.
func (m *Monitor) kernelLogTotals() *health.KernelLogTotals {
	kl := m.kl
	if kl == nil {
		return nil
	}
	if kl.totals != nil && kl.totals.Judged == kl.judged {
		return kl.totals
	}
	st, cs := kl.src.Stats(), kl.check.Stats()
	t := &health.KernelLogTotals{Reading: st.Open, Err: event.Clean(st.Err), Records: st.Read, Sequence: st.LastSeq, Judged: kl.judged,
		Dropped: st.Dropped + st.Oversized + st.Malformed, Lost: st.Lost, OtherFacility: cs.OtherFacility,
		Unmonitored: cs.Unmonitored, Unattributed: cs.Unattributed}
	for k, n := range cs.Matches {
		t.Matches = append(t.Matches, health.KernelLogMatch{Pattern: k.Pattern, Device: event.Clean(k.Device), Count: n})
	}
	sort.Slice(t.Matches, func(i, j int) bool {
		if t.Matches[i].Pattern != t.Matches[j].Pattern {
			return t.Matches[i].Pattern < t.Matches[j].Pattern
		}
		return t.Matches[i].Device < t.Matches[j].Device
	})
	kl.totals = t
	return t
}

// acknowledgeKernelLog is AcknowledgeReset for the kernel log: counter
// "kernel_log" or a pattern's name. ok is false for any other word.
func (d *Daemon) acknowledgeKernelLog(device string, port int, what, who string) (specs []event.Spec, ok bool, err error) {
	kl := d.mon.kl
	if kl == nil || !kl.check.IsAckWord(what) {
		return nil, false, nil
	}
	specs = kl.check.Acknowledge(d.mon.mem.KernelLog, device, port, what, who)
	if len(specs) == 0 {
		return nil, true, fmt.Errorf("acknowledge %s port %d: %w: no kernel-log condition (%s) on it", device, port, counters.ErrNotLatched, what)
	}
	return specs, true, nil
}
