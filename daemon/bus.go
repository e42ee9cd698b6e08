package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/inventory"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// superviseBus keeps the D-Bus API exported for the daemon's lifetime
// (dbusapi.Supervise); the daemon only says how to attach a new server.
func (d *Daemon) superviseBus(ctx context.Context) {
	defer close(d.busDone)
	dbusapi.Supervise(ctx, backend{d}, dbusapi.SuperviseOptions{
		Options: func() dbusapi.Options {
			d.mu.Lock()
			defer d.mu.Unlock()
			return dbusapi.Options{AdminGroup: d.cfg.AdminGroup, Logger: d.log}
		},
		Attach: func(s *dbusapi.Server) { d.attachBus(s) },
		Detach: func(*dbusapi.Server) { d.bus.Store(nil) },
		Logger: d.log,
	})
}

// attachable is a new D-Bus server as attaching it needs it: the
// publisher the loop posts to, and the history ListEvents serves.
type attachable interface {
	busPublisher
	Remember(ev event.Event, seq uint64)
}

// attachBus backfills a new server from the outbox and switches the
// daemon over to it, so that ListEvents on it holds every event kept,
// also those committed while no bus was attached.
//
// d.mu keeps a new commit job from starting, but the one in flight
// appends and announces without it: its events can reach the outbox
// after the first backfill yet be announced before the switch, to no
// bus. So the outbox is read again once the server is in place. Any
// event appended after that is announced to it; an event both
// remembered and posted is kept once (the ring keeps sequence numbers
// growing, and both paths add in sequence order).
func (d *Daemon) attachBus(s attachable) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var last uint64
	for _, rec := range d.ob.Recent(1024) {
		s.Remember(rec.Event, rec.Seq)
		last = rec.Seq
	}
	d.bus.Store(&busHolder{s})
	for _, rec := range d.ob.Since(last, 1024) {
		s.Remember(rec.Event, rec.Seq)
	}
}

// backend is the daemon as the D-Bus server sees it.
type backend struct{ d *Daemon }

// Manager and Ports read the published snapshot: no lock the poll loop
// holds, and the same verdict every other view shows.
func (b backend) Manager() dbusapi.ManagerView {
	mv := dbusapi.ManagerViewOf(b.d.Snapshot(), b.d.LastPoll())
	// Parked events are a delivery matter, not part of the verdict.
	mv.RejectedEvents = uint32(b.d.ob.Rejected())
	return mv
}

func (b backend) Ports() []dbusapi.PortView { return dbusapi.PortViewsOf(b.d.Snapshot()) }

func (b backend) Reload() error {
	if err := b.d.RequestReload(); err != nil {
		return fmt.Errorf("%w: %v", dbusapi.ErrConfigRefused, err)
	}
	return nil
}

func (b backend) AcknowledgeReset(device string, port int, counter string, uid uint32) error {
	d := b.d
	if topology.IsPCIAddress(device) {
		return d.acknowledgeFunction(device, uid)
	}
	d.mu.Lock()
	if !d.run.HasPort(device, port) {
		d.mu.Unlock()
		return fmt.Errorf("%w: %s port %d is not a monitored port (see nichealthctl ports)", dbusapi.ErrNoSuchPort, device, port)
	}
	now := time.Now()
	specs, err := d.acknowledge(device, port, counter, now, fmt.Sprintf("uid %d", uid))
	if err != nil {
		d.mu.Unlock()
		switch {
		case errors.Is(err, counters.ErrNotLatched):
			return fmt.Errorf("%w: %v", dbusapi.ErrNotLatched, err)
		case errors.Is(err, counters.ErrNoSuchCounter):
			return fmt.Errorf("%w: %v", dbusapi.ErrInvalidArgument, err)
		}
		return err
	}
	d.holdLocked(specs, now)
	evs := d.commitLocked(true)
	d.publishSnapshotLocked()
	d.mu.Unlock()
	d.publish(evs)
	return nil
}

// acknowledgeFunction is AcknowledgeReset with a PCI address: the NIC
// function reported gone was removed on purpose, and is forgotten, or its
// card was swapped for another model on purpose.
func (d *Daemon) acknowledgeFunction(addr string, uid uint32) error {
	d.mu.Lock()
	specs, err := d.run.AcknowledgeFunction(addr, fmt.Sprintf("uid %d", uid))
	if err != nil {
		d.mu.Unlock()
		switch {
		case errors.Is(err, inventory.ErrNotRaised):
			return fmt.Errorf("%w: %v", dbusapi.ErrNotLatched, err)
		case errors.Is(err, inventory.ErrStillPresent):
			return fmt.Errorf("%w: %v", dbusapi.ErrInvalidArgument, err)
		}
		return err
	}
	now := time.Now()
	d.holdLocked(specs, now)
	evs := d.commitLocked(true)
	// After the clear is durable: a crash in between keeps the card
	// expected and raises it again, rather than forgetting it silently.
	// While the outbox refuses the clear, the file is left for the next
	// inventory judgement.
	if d.durableLocked() {
		d.run.SaveExpectedInventory()
	}
	d.publishSnapshotLocked()
	d.mu.Unlock()
	d.publish(evs)
	d.log.Info("NIC function removal or card swap acknowledged", "pci", addr, "uid", uid)
	return nil
}

// AERAckCounter is the counter name AcknowledgeReset takes for the PCIe
// AER conditions on a port's path (not a counter-table name).
const AERAckCounter = aer.AckCounter

// acknowledge is AcknowledgeReset: counter "pcie_aer" clears the
// uncorrectable AER conditions on the port's path, anything else goes to
// the counter table.
func (d *Daemon) acknowledge(device string, port int, counter string, now time.Time, who string) ([]event.Spec, error) {
	return d.run.Acknowledge(device, port, counter, now, who)
}

func (b backend) RetryRejected(uid uint32) (uint32, error) {
	n := b.d.RetryRejected()
	b.d.log.Info("retry of rejected events requested", "uid", uid, "parked", n)
	return uint32(n), nil
}
