package observe

import (
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

var farEndChecks = []string{event.FarEndCheck}

// FarEndSource is the far end's reader (mad/farend.PeerReader): it reads
// on a goroutine of its own; the cycle only hands it the ports to watch
// when they change and takes its latest reading.
type FarEndSource interface {
	SetTargets([]farend.Target)
	Latest() *farend.PeerReading
}

// farEndWatch is what the observer tells the far end's reader: the plan's
// InfiniBand ports, each with its last link state (a change moves its
// epoch, and the reader finds its peer again at once).
type farEndWatch struct {
	src     FarEndSource
	plan    uint64
	targets []farend.Target
	links   []sysfs.Link
	epoch   uint64
	seenGen uint64
}

// OpenFarEnd starts handing the cycle the far end of the InfiniBand
// ports (the daemon's run; a one-shot check never reads it).
func (o *Observer) OpenFarEnd(src FarEndSource) {
	o.fe = farEndWatch{src: src, plan: ^uint64(0)}
}

// CloseFarEnd stops it (the reader is the caller's to close).
func (o *Observer) CloseFarEnd() { o.fe = farEndWatch{} }

// FarEndOpen says the far end is handed to the cycle.
func (o *Observer) FarEndOpen() bool { return o.fe.src != nil }

// farEndStep hands the reader the InfiniBand ports when the plan or a
// port's state changed (a state poll), and the cycle the reader's latest
// reading. A steady cycle compares and loads a pointer: no allocation.
func (o *Observer) farEndStep() {
	w := &o.fe
	o.obs.FarEnd = nil
	if w.src == nil {
		return
	}
	if o.obs.StatePoll && o.farEndTargets() {
		w.src.SetTargets(w.targets)
	}
	rd := w.src.Latest()
	o.obs.FarEnd = rd
	if rd != nil && rd.Gen != w.seenGen {
		w.seenGen, o.viewChanged = rd.Gen, true
	}
}

// farEndTargets updates the targets from the plan's InfiniBand ports and
// says whether they changed.
func (o *Observer) farEndTargets() bool {
	w := &o.fe
	ports := o.Ports()
	if w.plan != o.planGen {
		w.plan = o.planGen
		w.targets, w.links = w.targets[:0], w.links[:0]
		for _, p := range ports {
			if p.Port.LinkLayer != topology.LinkLayerInfiniBand {
				continue
			}
			w.epoch++
			w.targets = append(w.targets, farend.Target{Device: p.Device.Name, Port: p.Port.Num, GUID: p.Port.GUID, Up: p.Up(), Epoch: w.epoch})
			w.links = append(w.links, p.Link)
		}
		return true
	}
	changed := false
	i := 0
	for _, p := range ports {
		if p.Port.LinkLayer != topology.LinkLayerInfiniBand {
			continue
		}
		if i >= len(w.targets) {
			break
		}
		t := &w.targets[i]
		if w.links[i] != p.Link || t.Up != p.Up() {
			w.epoch++
			t.Up, t.Epoch, w.links[i] = p.Up(), w.epoch, p.Link
			changed = true
		}
		i++
	}
	return changed
}
