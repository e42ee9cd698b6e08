package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/topology/sysfs"
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

func (b backend) Manager() dbusapi.ManagerView {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	mv := dbusapi.ManagerView{
		Version: Version, NodeName: d.cfg.NodeName, BootID: d.bootID,
		PollIntervalUSec: uint64(d.cfg.PollInterval.Microseconds()), LastPollUSec: usec(d.lastPoll),
		ConfigPath: d.opts.ConfigPath, ConfigGeneration: d.generation, LastReloadError: d.reloadErr,
		Ready: d.ready, FatalPorts: []string{}, RejectedEvents: uint32(d.ob.Rejected()),
	}
	nics := map[string]bool{}
	for _, p := range d.mon.ports {
		mv.MonitoredPorts++
		nics[p.dev.Name] = true
		if p.observed && checks.Judge(p.obs) == checks.Fatal {
			mv.FatalPorts = append(mv.FatalPorts, fmt.Sprintf("%s/%d", p.dev.Name, p.port.Num))
		}
	}
	for k, fl := range d.mon.st.BreachFlags {
		if fl.Breached && fl.IsFatal {
			if dev, port, _, ok := counters.ParseKey(k); ok {
				key := fmt.Sprintf("%s/%d", dev, port)
				if !slices.Contains(mv.FatalPorts, key) {
					mv.FatalPorts = append(mv.FatalPorts, key)
				}
			}
		}
	}
	sort.Strings(mv.FatalPorts)
	mv.MonitoredNICs = uint32(len(nics))
	mv.Healthy = len(mv.FatalPorts) == 0 && len(d.mon.st.CardAnomalies) == 0 && len(d.mon.st.Disappeared) == 0
	return mv
}

func (b backend) Ports() []dbusapi.PortView {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]dbusapi.PortView, 0, len(d.mon.ports))
	for _, p := range d.mon.ports {
		out = append(out, d.portViewLocked(p))
	}
	return out
}

func (d *Daemon) portViewLocked(p *portPlan) dbusapi.PortView {
	pv := dbusapi.PortView{
		Device: p.dev.Name, Port: int32(p.port.Num), LinkLayer: p.port.LinkLayer,
		Role: string(p.dev.Role), RoleReason: p.dev.RoleReason, NetDev: p.netdev,
		PCIAddress: p.dev.PCIAddress, NUMANode: int32(p.dev.NUMANode), Rate: p.port.Rate,
		Counters: []dbusapi.CounterView{}, Sanity: []string{},
	}
	if p.rate.Err == nil && len(p.rate.Value()) > 0 {
		pv.Rate = string(sysfs.TrimValue(p.rate.Value()))
	}
	if p.observed {
		v := checks.Judge(p.obs)
		pv.State, pv.PhysState = p.obs.State.Name, p.obs.Phys.Name
		pv.Healthy = v == checks.Healthy || v == checks.Transient
		pv.Fatal = v == checks.Fatal
		pv.Message = checks.Message(p.obs, v)
	}
	if t, ok := d.mon.lastChange[checks.PortKey(p.dev.Name, p.port.Num)]; ok {
		pv.LastChangeUSec = usec(t)
	}
	// Only the counters this port's link layer has (carrier_changes is a
	// RoCE netdev counter, never shown on an IB port).
	defs := d.mon.viewDefs[:0]
	for _, def := range d.mon.defs {
		if def.AppliesTo(p.port.LinkLayer) {
			defs = append(defs, def)
		}
	}
	d.mon.viewDefs = defs
	for _, cv := range d.mon.eval.View(d.mon.st, p.dev.Name, p.port.Num, defs) {
		pv.Counters = append(pv.Counters, dbusapi.CounterView{
			Name: cv.Name, Value: cv.Value, Rate: cv.Rate, Unit: strings.TrimPrefix(cv.RateUnit, "/"), ThresholdType: cv.ThresholdType,
			Threshold: cv.Threshold, Fatal: cv.Fatal, Breached: cv.Breached, BreachedSinceUSec: usec(cv.BreachedSince),
			Saturated: cv.Saturated, LostGbps: cv.LostGbps, LostPercent: cv.LostPercent,
		})
		if cv.Breached && cv.Fatal {
			pv.Healthy = false
			pv.Fatal = true
		}
	}
	pv.Sanity = append(pv.Sanity, d.mon.sanity[checks.PortKey(p.dev.Name, p.port.Num)]...)
	return pv
}

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
	d.mu.Unlock()
	go d.publish(evs)
	return nil
}
