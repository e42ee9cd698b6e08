package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/dbusapi"
)

// busRetry is how long to wait before reconnecting to a system bus that
// was unreachable or went away (dbus-daemon restarted).
const busRetry = 2 * time.Second

// superviseBus keeps the D-Bus API exported for the daemon's lifetime:
// monitoring never depends on the bus, and when the bus restarts the API
// comes back by itself.
func (d *Daemon) superviseBus(ctx context.Context) {
	defer close(d.busDone)
	logged := false
	for {
		s, conn, err := d.startBus()
		if err != nil {
			if !logged {
				d.log.Warn("D-Bus API unavailable; monitoring continues and the connection is retried", "err", err)
				logged = true
			}
		} else {
			if logged {
				d.log.Info("D-Bus API available again")
			}
			logged = false
			// Backfill and switch over under d.mu, so no event committed in
			// between is missed; one published twice is kept once.
			d.mu.Lock()
			for _, rec := range d.ob.Recent(1024) {
				s.Remember(rec.Event, rec.Seq)
			}
			d.bus.Store(&busHolder{s})
			d.mu.Unlock()
			s.Refresh()
			select {
			case <-ctx.Done():
			case <-conn.Context().Done():
				d.log.Warn("lost the system bus; reconnecting")
			}
			d.bus.Store(nil)
			s.Close()
			conn.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(busRetry):
		}
	}
}

// startBus connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured
// by godbus) and exports the API. A private connection, not godbus's shared
// one, so that closing it on a reconnect closes only ours.
func (d *Daemon) startBus() (*dbusapi.Server, *dbus.Conn, error) {
	conn, err := dbus.SystemBusPrivate()
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the system bus: %w", err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("authenticate to the system bus: %w", err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("register on the system bus: %w", err)
	}
	d.mu.Lock()
	group := d.cfg.AdminGroup
	d.mu.Unlock()
	s, err := dbusapi.Serve(conn, backend{d}, dbusapi.Options{AdminGroup: group, Logger: d.log})
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return s, conn, nil
}

// backend is the daemon as the D-Bus server sees it.
type backend struct{ d *Daemon }

func usec(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixMicro())
}

// Manager and Ports read the published snapshot: no lock the poll loop
// holds, and the same verdict every other view shows.
func (b backend) Manager() dbusapi.ManagerView {
	return dbusapi.ManagerViewOf(b.d.Snapshot(), b.d.LastPoll())
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
	d.mu.Lock()
	var pp *portPlan
	for _, p := range d.mon.ports {
		if p.dev.Name == device && p.port.Num == port {
			pp = p
		}
	}
	if pp == nil {
		d.mu.Unlock()
		return fmt.Errorf("%w: %s port %d is not a monitored port (see nichealthctl ports)", dbusapi.ErrNoSuchPort, device, port)
	}
	now := time.Now()
	specs, err := d.mon.eval.Acknowledge(d.mon.st, device, port, counter, now, fmt.Sprintf("uid %d", uid))
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
	evs := d.commitLocked(specs, true, now)
	d.publishSnapshotLocked()
	d.mu.Unlock()
	d.publish(evs)
	return nil
}
