package observe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/reader"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// counterTick is the fixed cadence of counter sampling and judging, whatever
// the state poll interval (seed state 12.1): a delta threshold means "per
// 1 s tick", a 100 ms poll must not cut a burst into sub-threshold slices,
// and a 10 s poll must not let one add up ten seconds of errors.
const counterTick = time.Second

// sanityEvery is how often the link sanity pass re-reads PCIe link state,
// SM LIDs and character devices. These change rarely (a retrain, an SM
// failover, a module unload) and cost file reads, so they stay off the
// per-second path; a port's rate changing triggers a pass at once.
const sanityEvery = time.Minute

// unusableReprobe is how often discovery runs again while an entry of
// class/infiniband cannot be used, or a monitored RoCE port's netdev is
// absent: a netdev moved back into this namespace, or recreated, sends no
// event discovery could wait for, and must not stay unmonitored until an
// operator reloads.
const unusableReprobe = time.Minute

// NextWake is when the loop must run the next cycle: the earliest of the
// next state poll, the next counter tick and the next AER read.
func (o *Observer) NextWake() time.Time {
	if len(o.counter.files) > 0 && o.nextCounterTick.Before(o.nextStatePoll) {
		return o.aerWake(o.nextCounterTick)
	}
	return o.aerWake(o.nextStatePoll)
}

// Cycle observes the host once: on a state poll it lists the devices
// (rediscovering when the set changed), reads the state files and parses
// every port; when due it samples the counters (the 1 s tick), reads the
// PCIe AER files and says the link sanity pass is due. Each step runs
// inside the boundary for the checks it reads for. The observation it
// returns is valid until the next Cycle; the caller calls Settle once the
// checks have judged it.
func (o *Observer) Cycle(now time.Time) *Observation {
	obs := &o.obs
	obs.Now, obs.Boot, obs.Paths = now, o.boot, o.cfg.Paths
	obs.StatePoll = o.cycles == 0 || !now.Before(o.nextStatePoll)
	obs.First = obs.StatePoll && o.cycles == 0
	obs.Enumerated, obs.EnumErr = false, nil
	obs.Reads = obs.Reads[:0]
	obs.CounterTick, obs.FirstTick, obs.AERTick, obs.SanityDue = false, false, false, false
	o.inv.last.Scanned = false
	obs.KernelLog.Records, obs.KernelLog.StatsChanged = nil, false
	obs.LinkStory.New = false
	if obs.StatePoll {
		o.b.Run("presence", stateChecks, o.steps.presence)
		o.read(&o.state)
		for _, p := range o.ports {
			p.Readable = false
		}
		o.b.Run("observe", stateChecks, o.steps.observe)
		o.b.Run("inventory", inventoryChecks, o.steps.inventory)
	}
	o.b.Run("counters", degradationChecks, o.steps.counters)
	o.b.Run("pcie-aer", aerChecks, o.steps.aer)
	o.b.Run("kernel-log", kernelLogChecks, o.steps.kernelLog)
	o.b.Run("far-end", farEndChecks, o.steps.farEnd)
	if obs.StatePoll {
		o.b.Run("link-story", linkStoryChecks, o.steps.linkStory)
	}
	if obs.StatePoll && o.cfg.Sanity && (o.cycles == 0 || o.devicesSetChanged || o.rateChanged || now.Sub(o.lastSanity) >= sanityEvery) {
		obs.SanityDue = true
		if !o.b.Failed(event.LinkSanityCheck) {
			o.lastSanity, o.rateChanged = now, false
		}
	}
	o.publish(obs)
	return obs
}

// cycleSteps are the cycle's steps, made once: a closure made at every
// cycle and handed to the boundary would allocate at every cycle.
type cycleSteps struct {
	presence, observe, inventory, counters, aer, kernelLog, linkStory, farEnd func()
}

func (o *Observer) makeSteps() {
	o.steps = cycleSteps{
		presence: func() {
			err := o.enumerate(o.obs.Now)
			o.obs.Enumerated, o.obs.EnumErr = err == nil, err
		},
		observe: func() {
			for _, p := range o.ports {
				if c := event.StateCheckFor(p.Port.Port.LinkLayer); !o.b.Failed(c) {
					o.b.Enter(c)
					o.observe(p)
				}
			}
		},
		inventory: func() {
			o.b.Enter(event.NICInventoryCheck)
			o.inventoryStep()
		},
		counters: func() { o.counterCycle(o.obs.Now) },
		aer: func() {
			o.b.Enter(event.PCIeAERCheck)
			o.obs.AERTick = o.aerCycle(o.obs.Now)
		},
		kernelLog: func() {
			o.b.Enter(event.KernelLogCheck)
			o.kernelLogStep()
		},
		farEnd: func() {
			o.b.Enter(event.FarEndCheck)
			o.farEndStep()
		},
		linkStory: o.linkStoryStep,
	}
}

// publish points the observation at the plan and hands it what the cycle
// changed.
func (o *Observer) publish(obs *Observation) {
	obs.Devices, obs.Present, obs.Counters, obs.Matrix = o.devices, o.present, o.cfg.Counters, o.matrix
	obs.DevicesChanged, obs.ActiveChanged = o.devicesSetChanged, o.activeChanged
	obs.Returned = append(obs.Returned[:0], o.returned...)
	o.returned = o.returned[:0]
	obs.Ports, obs.Plan = o.Ports(), o.planGen
	obs.planned = o.planned
	if o.aer != nil {
		obs.AER = o.aer.obs
	} else {
		obs.AER = nil
	}
}

// Settle ends a cycle once the checks judged it: the read plan is built
// again when it must (a netdev disappeared: a rediscovery finds its new
// name after a udev rename, or plans the port without it; replan: a check
// failed, and its reads and driver calls must stop, or a source that
// panics would panic on the worker every tick), and a state poll moves the
// cadence on.
func (o *Observer) Settle(now time.Time, replan bool) {
	switch {
	case o.netdevGone:
		o.netdevGone = false
		o.rediscover()
	case replan:
		o.buildPlan()
	}
	if !o.obs.StatePoll {
		return
	}
	o.cycles++
	o.nextStatePoll = now.Add(o.cfg.PollInterval)
	o.devicesSetChanged = false
	o.activeChanged = false
}

// enumerate lists class/infiniband and rediscovers when the device set
// changed. The error says the listing failed (presence is then not judged).
func (o *Observer) enumerate(now time.Time) error {
	setChanged, err := o.lister.Changed(o.cfg.Filter)
	// An entry discovery could not use (a dangling link) is not a change
	// at every poll; it is looked at again now and then, in case its
	// target appeared.
	if o.lastDiscover.IsZero() || setChanged {
		o.lastDiscover = now
	}
	reprobe := (o.lister.Unusable() > 0 || o.netdevsAbsent > 0) && now.Sub(o.lastDiscover) >= unusableReprobe
	if err == nil && (setChanged || reprobe) {
		if setChanged {
			clear(o.inv.vpd) // a function may have been swapped
		}
		o.lastDiscover = now
		o.rediscover()
	}
	return err
}

// read reads a cadence's files and records each one's outcome in the
// observation.
func (o *Observer) read(c *cadence) {
	o.stuckBuf = o.rd.Read(c.files, o.stuckBuf[:0])
	obs := &o.obs
	for i, f := range c.files {
		ow := &c.owners[i]
		obs.Reads = append(obs.Reads, Read{Path: f.Path, Err: f.Err, Source: f.IsSource(), Device: ow.dev, Port: ow.port, LinkLayer: ow.linkLayer})
	}
}

// counterCycle samples every counter when the counter tick is due. Ticks
// keep a fixed phase; one that comes more than a tick late (a stalled
// loop) restarts the phase from now.
func (o *Observer) counterCycle(now time.Time) {
	if len(o.counter.files) == 0 || (o.counterTicks != 0 && now.Before(o.nextCounterTick)) {
		return
	}
	obs := &o.obs
	obs.FirstTick = o.counterTicks == 0
	// The sample stands for its tick, not for when the loop woke up to
	// take it (DESIGN.md difference 14): two samples one tick apart are a
	// full 1 s window, whatever the wake-up jitter, so a burst is judged
	// over the second it happened in, never spread over two. A tick more
	// than a tick late (a stalled loop) restarts the phase from now.
	at := now
	if next := o.nextCounterTick.Add(counterTick); obs.FirstTick || !next.After(now) {
		o.nextCounterTick = now.Add(counterTick)
	} else {
		at = o.nextCounterTick
		o.nextCounterTick = next
	}
	o.counterTicks++
	obs.CounterTick, obs.CounterAt = true, at
	o.read(&o.counter)
	for _, p := range o.ports {
		if check := event.DegradationCheckFor(p.Port.Port.LinkLayer); o.b.Failed(check) {
			continue
		} else if len(p.counters) > 0 {
			o.b.Enter(check)
		}
		for ci := range p.counters {
			o.sample(&p.counters[ci], &p.Samples[ci], at)
			if err := p.Samples[ci].Err; err != nil && p.counters[ci].phy != nil && errors.Is(err, unix.ENODEV) {
				o.statsNameStale(p, &p.counters[ci])
			}
		}
	}
}

// sample takes one counter's reading of this tick into s.
func (o *Observer) sample(cr *counterRead, s *Sample, at time.Time) {
	raw, err := cr.sample()
	if pe, ok := err.(*reader.PanicError); ok {
		panic(pe) // a driver call's panic, caught on the worker: this check's
	}
	s.Unchanged = err == nil && cr.seen && string(raw) == string(cr.last[:cr.lastLen])
	if !s.Unchanged {
		o.viewChanged = true
	}
	s.Since, s.At = cr.lastAt, at
	if err == nil {
		cr.lastLen = copy(cr.last[:], raw)
		cr.seen, cr.lastAt = true, at
	} else {
		cr.seen = false
	}
	var v uint64
	if err == nil {
		v, err = sysfs.ParseCounter(raw)
		if err != nil {
			err = fmt.Errorf("%s: %w", cr.file.Path, err)
		}
	}
	s.Value, s.Err = v, err
}

// observe parses one port's state files into its observation.
func (o *Observer) observe(p *portPlan) {
	p.Readable = false
	if p.state.Err != nil || p.phys.Err != nil {
		o.noteUnreadable(p, p.state.Err, p.phys.Err)
		return
	}
	s, err1 := sysfs.ParseState(p.state.Value())
	ph, err2 := sysfs.ParsePhysState(p.phys.Value())
	if err1 != nil || err2 != nil {
		o.noteUnreadable(p, err1, err2)
		return
	}
	if o.unreadable[p.Device.Name] {
		delete(o.unreadable, p.Device.Name)
		o.log.Info("device readable again", "device", p.Device.Name, "port", p.Port.Port.Num)
	}
	link, oper := sysfs.Link{State: s, Phys: ph}, ""
	if p.oper != nil && p.oper.Err == nil {
		o.operReadable(p)
		// Converted to a string only when it changes: steady polls stay
		// allocation-free.
		v := sysfs.TrimValue(p.oper.Value())
		if string(v) != string(p.operRaw[:p.operLen]) || !p.Observed {
			p.operLen = copy(p.operRaw[:], v)
			oper = string(v)
		} else {
			oper = p.Operstate
		}
	} else if p.oper != nil {
		// Unreadable (the netdev was deleted or renamed under a kept
		// descriptor): the port is not judged from a failed read; its
		// last known operstate stands (DESIGN.md difference 3).
		oper = p.Operstate
		o.operUnreadable(p)
	}
	if p.rate.Err == nil {
		v := p.rate.Value()
		if string(v) != string(p.rateRaw[:p.rateLen]) {
			p.rateLen = copy(p.rateRaw[:], v)
			o.viewChanged = true
			p.RateText = string(sysfs.TrimValue(v))
			if r, err := sysfs.ParseRate(v); err == nil {
				if p.Observed && r.Gbps != p.RateGbps {
					o.rateChanged = true
				}
				p.RateGbps = r.Gbps
			}
		}
	}
	wasUp, seen := p.Up(), p.Observed
	if !p.Observed || link != p.Link || oper != p.Operstate {
		o.viewChanged = true
		o.storyStale = true // the pass reads empty cages again on a change
	}
	p.Link, p.Operstate, p.Observed, p.Readable = link, oper, true, true
	if p.Up() != wasUp {
		o.activeChanged = true
	}
	if p.Up() != wasUp || !seen {
		o.linkDown(p)
	}
}

func (o *Observer) noteUnreadable(p *portPlan, errs ...error) {
	if o.unreadable[p.Device.Name] {
		return
	}
	o.unreadable[p.Device.Name] = true
	err := errors.Join(errs...)
	if errors.Is(err, reader.ErrStuck) {
		return // reported as its own event
	}
	level := slog.LevelWarn
	if errors.Is(err, fs.ErrNotExist) {
		level = slog.LevelInfo // vanishing mid-read: disappearance logic decides
	}
	o.log.Log(context.Background(), level, "cannot read port state; keeping its last known state until it reads again",
		"device", p.Device.Name, "port", p.Port.Port.Num, "err", err)
}
