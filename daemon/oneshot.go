package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
)

// CheckOnce runs the daemon's own checks over one observation of the host
// and returns their verdict: what `nichealthctl check --offline` prints
// when no daemon answers. It is the first poll of a daemon with no state
// (DESIGN.md section 9: the plugin must say what the daemon says, up or
// down): a port unhealthy since first sight is unprovisioned unless its
// card lacks it against its peers, which card homogeneity reports. A
// plugin has no history to hold a shortfall over, so cardAnomalyHold is
// taken as passed: a card short of its peers is reported at once, as the
// daemon reports it once the hold has passed (a blip may show for one
// check; Nagios' retries are made for that). Link sanity is judged as at
// start-up; counters are read (perfdata) but cannot be judged without
// history. Nothing is written.
//
// When the NIC roles cannot be classified (no GPU topology), every
// Mellanox PF is checked with an unknown role rather than failing: a check
// over-reports rather than hides, and note says so.
func CheckOnce(cfg *config.Config, log *slog.Logger) (snap *health.Snapshot, note string, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	once := *cfg
	once.CardAnomalyHold = 0
	mem := NewMemory()
	m := NewMonitor(&once, mem, persist.BootFresh, log)
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
