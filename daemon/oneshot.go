package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
)

// CheckOnce runs the daemon's own checks over one observation of the host
// and returns their verdict: what `nichealthctl check --offline` prints
// when no daemon answers. It is a poll of a daemon that last saw every
// port healthy: a plugin run by hand or by Nagios has no history, and
// assuming the ports were up reports every port that is not (where a
// daemon's first start would treat a down port on a card like its peers as
// unprovisioned and stay silent). Card homogeneity and link sanity are
// judged as at start-up; counters are read (perfdata) but cannot be judged
// without history. Nothing is written.
//
// When the NIC roles cannot be classified (no GPU topology), every
// Mellanox PF is checked with an unknown role rather than failing: a check
// over-reports rather than hides, and note says so.
func CheckOnce(cfg *config.Config, log *slog.Logger) (snap *health.Snapshot, note string, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mem := NewMemory()
	m := NewMonitor(cfg, mem, persist.BootSame, log)
	defer m.Close()
	m.unclassifiedOK = true
	if err := m.Discover(); err != nil {
		return nil, "", err
	}
	if m.unclassifiedNote != "" {
		// Without roles there are no peers: a management NIC would be
		// measured against the fabric NICs.
		m.cfg.Sanity.RateVsPeers = false
	}
	for _, p := range m.ports {
		mem.Ports.PortStates[checks.PortKey(p.dev.Name, p.port.Num)] = checks.PortState{State: "4: ACTIVE", PhysicalState: "5: LinkUp",
			Device: p.dev.Name, Port: p.port.Num, LinkLayer: p.port.LinkLayer}
	}
	for _, d := range m.devices {
		if d.Monitored() {
			mem.Ports.KnownDevices = append(mem.Ports.KnownDevices, d.Name)
		}
	}
	now := time.Now()
	specs, _ := m.Cycle(now)
	model := health.NewModel()
	stamp := event.Stamp{NodeName: cfg.NodeName, Strategy: cfg.Strategy, Now: now}
	for _, s := range specs {
		ev := event.New(s, stamp)
		model.Apply(&ev)
	}
	snap = health.Build(health.Node{NodeName: event.Clean(cfg.NodeName), PollInterval: cfg.PollInterval, Ready: true},
		m.portInfos(), model.Conditions())
	return snap, m.unclassifiedNote, nil
}

// classifyUnknown gives every Mellanox PF an unknown role (monitored).
func classifyUnknown(devs []*topology.Device, why error) string {
	for _, d := range devs {
		if d.Mellanox && !d.IsVF && !d.LimitedPF {
			d.Role, d.RoleReason = topology.RoleUnknown, "not classified: no GPU topology"
		}
	}
	return fmt.Sprintf("cannot classify NIC roles, so every Mellanox PF is checked (management NICs included) "+
		"and rates are not compared between ports: %v", why)
}
