package observe

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// KernelLogBatch bounds the kernel log records one cycle hands the checks:
// the rest wait in the reader's queue for the next cycle, so a storm of
// kernel messages spreads over cycles instead of lengthening one.
const KernelLogBatch = 1024

var kernelLogChecks = []string{event.KernelLogCheck}

// KernelLog is what the kernel log gave one cycle.
type KernelLog struct {
	// Open says the reader is started (the daemon's run; a one-shot check
	// never reads the kernel log).
	Open bool
	// Records were read since the last cycle, oldest first, at most
	// KernelLogBatch.
	Records []kmsg.Record
	// Stats are the reader's totals since it opened; StatsChanged says
	// they moved since the last cycle.
	Stats        kmsg.Stats
	StatsChanged bool
}

// kernelLogReader is the kernel log as the observer reads it: a reader on
// its own goroutine (topology/kmsg), drained once per cycle.
type kernelLogReader struct {
	src  *kmsg.Source
	path string
	buf  []kmsg.Record
	seen kmsg.Stats
	// room is how many records the checks take next cycle (SetKernelLogRoom).
	room    int
	roomSet bool
}

// SetKernelLogRoom says how many records the kernel-log check can take at
// the next cycle (at most KernelLogBatch): a check still judging what it
// was handed takes fewer, and the reader's bounded queue and the kernel's
// ring hold the rest.
func (o *Observer) SetKernelLogRoom(n int) {
	o.kl.room, o.kl.roomSet = min(max(n, 0), KernelLogBatch), true
}

// OpenKernelLog starts reading <devRoot>/kmsg; with resume, after the
// record numbered after (the kernel-log check's cursor of this boot). An
// open reader is reopened.
func (o *Observer) OpenKernelLog(resume bool, after uint64) {
	o.CloseKernelLog()
	k := &o.kl
	k.path = o.KernelLogPath()
	k.src = kmsg.Open(kmsg.Options{Path: k.path, Resume: resume, After: after, Log: o.log})
	k.seen = kmsg.Stats{}
}

// CloseKernelLog stops reading the kernel log.
func (o *Observer) CloseKernelLog() {
	if o.kl.src != nil {
		o.kl.src.Close()
		o.kl.src, o.kl.path = nil, ""
	}
	clear(o.kl.buf)
	o.kl.buf = o.kl.buf[:0]
}

// KernelLogPath is the kernel log the configuration names.
func (o *Observer) KernelLogPath() string { return filepath.Join(o.cfg.Paths.DevRoot, "kmsg") }

// KernelLogOpen is the kernel log being read ("" when none).
func (o *Observer) KernelLogOpen() string { return o.kl.path }

// kernelLogStep hands the cycle what the reader queued since the last one,
// and logs what the kernel's ring lost before it could be read.
func (o *Observer) kernelLogStep() {
	k := &o.kl
	out := &o.obs.KernelLog
	out.Records, out.StatsChanged = nil, false
	out.Open = k.src != nil
	if k.src == nil {
		return
	}
	// The previous cycle's records are judged: their strings are not kept
	// alive by the buffer.
	clear(k.buf)
	room := KernelLogBatch
	if k.roomSet {
		room = k.room
	}
	k.buf = k.buf[:0]
	if room > 0 {
		k.buf = k.src.Drain(k.buf, room)
	}
	out.Records = k.buf
	if len(k.buf) > 0 {
		o.viewChanged = true
	}
	for _, l := range k.src.TakeLosses() {
		why := "records were gone when the reader started (the ring wrapped while the daemon was down)"
		if l.Overrun {
			why = "the kernel's ring buffer overwrote them before they were read (a kernel message storm)"
		}
		o.log.Warn("kernel log records lost; the kernel-log check did not see them", "lost", l.N(), "first_seq", l.From,
			"last_seq", l.To, "why", why, "file", k.path)
	}
	if st := k.src.Stats(); st != k.seen {
		k.seen, out.StatsChanged, o.viewChanged = st, true, true
	}
	out.Stats = k.seen
}

// VFs lists a PF's VFs (its virtfnN links, lower-case PCI addresses),
// which discovery sees only once they have an RDMA device: a VF that
// failed to probe is still one of the host's functions. It reads sysfs:
// call it when the plan changed, not every cycle.
func (o *Observation) VFs(d *topology.Device) []string {
	if d.PCIDir == "" {
		return nil
	}
	links, _ := filepath.Glob(filepath.Join(d.PCIDir, "virtfn*"))
	var out []string
	for _, l := range links {
		if t, err := os.Readlink(l); err == nil {
			out = append(out, strings.ToLower(filepath.Base(t)))
		}
	}
	return out
}
