package runner

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/inventory"
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
	snap, notes, err := AsRestarted(c, Prior{Boot: observe.BootFresh}, log)
	return snap, strings.Join(notes, "; "), err
}

// Prior is what a stopped daemon left for its next start, as read by
// someone who must not change it (persist.Peek, persist.PeekCrossBoot).
type Prior struct {
	// Boot is how the state file relates to the running boot, as
	// persist.ApplyBoot says: observe.BootSame restores the checks' memory
	// and the health model; after a reboot, or with no usable state, they
	// start empty, as the daemon's do.
	Boot observe.Boot
	// BootID is the running boot's ID ("" when unknown).
	BootID string
	// Section returns a check's section of the state file (nil: none).
	Section func(name string) []byte
	// Health is the state file's health conditions (nil: none).
	Health []byte
	// InventoryPath and Inventory are the expected inventory file and its
	// content, which a reboot does not clear (nil: none, so nothing is
	// expected from an earlier boot).
	InventoryPath string
	Inventory     []byte
}

// AsRestarted judges the host as the daemon would at its first poll after
// a restart with prior (DESIGN.md difference 17): every check's memory
// restored from its section, the health model from the state's
// conditions, the expected inventory loaded, then one cycle and the rules
// after it, exactly as the daemon's start-up and first poll run them. It
// writes nothing: the expected inventory is read from prior and never
// saved, an unusable one is not moved aside, and the kernel log is not
// read (it needs CAP_SYSLOG; what the kernel said while the daemon was
// down is judged when it starts). Without same-boot memory there is no
// history to hold a shortfall over, and cardAnomalyHold is taken as
// passed, as Once says; with it, a hold in progress goes on from when it
// began. The outbox is not replayed: it holds events the state does not
// only after a crash between the two commits, and the first poll detects
// again what they said. notes say what could not be used.
func AsRestarted(c *config.Config, p Prior, log *slog.Logger) (snap *health.Snapshot, notes []string, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := *c
	if p.Boot != observe.BootSame {
		cfg.CardAnomalyHold = 0
	}
	section := p.Section
	if section == nil || p.Boot != observe.BootSame {
		section = func(string) []byte { return nil }
	}
	r := New(&cfg, p.Boot, p.BootID, log, Seams{}, nil)
	r.obs.Classify(true)
	defer r.Close()
	if dropped := r.Restore(section); len(dropped) > 0 {
		notes = append(notes, "state file entries dropped as invalid: "+strings.Join(dropped, "; "))
	}
	var healthRaw []byte
	if p.Boot == observe.BootSame {
		healthRaw = p.Health
	}
	model, note := r.RestoreModel(healthRaw)
	if note != "" {
		notes = append(notes, note)
	}
	r.SetConditions(model)
	r.Resume(model)
	if p.InventoryPath != "" {
		st := &frozenStore{path: p.InventoryPath, b: p.Inventory}
		r.UseExpectedInventory(st)
		if st.unusable {
			notes = append(notes, fmt.Sprintf("expected NIC inventory %s is unusable, so a NIC missing since the last boot cannot be recognised", p.InventoryPath))
		}
	}
	if err := r.Discover(); err != nil {
		return nil, notes, err
	}
	if why := r.Unclassified(); why != "" {
		// Without roles there are no peers: a management NIC would be
		// measured against the fabric NICs.
		notes = append(notes, why)
		cfg.Sanity.RateVsPeers = false
		r.set.sanity.Configure(sanityConfig(&cfg))
	}
	now := time.Now()
	// The daemon starts the kernel-log check before its first poll: what
	// it remembers is settled then (conditions of patterns changed while
	// it was down). The reader stays closed.
	r.pending = append(r.pending, r.set.kernelLog.Start(now)...)
	stamp := event.Stamp{NodeName: cfg.NodeName, Strategy: cfg.Strategy, Now: now}
	apply := func(specs []event.Spec) {
		for _, s := range specs {
			ev := event.New(s, stamp)
			model.Apply(&ev)
		}
	}
	specs, _ := r.Cycle(now)
	apply(specs)
	after, _ := r.After(now, len(specs))
	apply(after)
	node := health.Node{NodeName: event.Clean(cfg.NodeName), BootID: p.BootID, PollInterval: cfg.PollInterval, Ready: true}
	snap = health.Build(node, r.PortInfos(), model.Conditions())
	snap.Inventory = r.InventoryInfos()
	return snap, notes, nil
}

// frozenStore is the expected inventory as read: loading hands out the
// bytes, and nothing is ever written or moved (the file is the daemon's).
type frozenStore struct {
	path     string
	b        []byte
	unusable bool
}

var _ inventory.Store = (*frozenStore)(nil)

func (s *frozenStore) Path() string                     { return s.path }
func (s *frozenStore) Load() ([]byte, error)            { return s.b, nil }
func (s *frozenStore) Quarantine() string               { s.unusable = true; return "" }
func (*frozenStore) SaveIfChanged([]byte) (bool, error) { return false, nil }
