package runner

import (
	"log/slog"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
)

// Once runs the daemon's own checks over one observation of the host and
// returns their verdict: what `nichealthctl check --offline` prints when
// no daemon answers. It is the first poll of a daemon with no state
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
func Once(c *config.Config, log *slog.Logger) (snap *health.Snapshot, note string, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := *c
	cfg.CardAnomalyHold = 0
	r := New(&cfg, observe.BootFresh, "", log, Seams{}, health.NewModel())
	r.obs.Classify(true)
	defer r.Close()
	if err := r.Discover(); err != nil {
		return nil, "", err
	}
	if note = r.Unclassified(); note != "" {
		// Without roles there are no peers: a management NIC would be
		// measured against the fabric NICs.
		cfg.Sanity.RateVsPeers = false
		r.set.sanity.Configure(sanityConfig(&cfg))
	}
	now := time.Now()
	specs, _ := r.Cycle(now)
	model := health.NewModel()
	stamp := event.Stamp{NodeName: cfg.NodeName, Strategy: cfg.Strategy, Now: now}
	for _, s := range specs {
		ev := event.New(s, stamp)
		model.Apply(&ev)
	}
	node := health.Node{NodeName: event.Clean(cfg.NodeName), PollInterval: cfg.PollInterval, Ready: true}
	return health.Build(node, r.PortInfos(), model.Conditions()), note, nil
}
