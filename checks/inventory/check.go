package inventory

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
	pci "github.com/nichealth/nichealthd/topology/inventory"
)

// Section is the inventory check's section of the state file.
const Section = "inventory"

// MemoryVersion is the version of the section this build writes.
const MemoryVersion = 1

// ModelDefault marks an expectation left to the GPU model's default.
const ModelDefault = -1

// Config is [inventory], and the checks switched on.
type Config struct {
	Enabled       bool
	FirmwareDrift bool
	// ExpectedPorts is how many active compute ports the node needs:
	// ModelDefault for the GPU model's documented complement, 0 for no
	// expectation. ExpectedRateGbps is the least rate a port counts at
	// (ModelDefault: the model's).
	ExpectedPorts    int
	ExpectedRateGbps float64
	// Hold is how long a shortfall must last before it is reported.
	Hold time.Duration
	// LostHold is how long a run-time loss of a function must last, on
	// top of its checks.LostAfter enumerations (Scan.LostHold).
	LostHold time.Duration
	// Checks are the checks switched on: a card's conditions are its link
	// layer's state check's, so a card whose check is off is not judged.
	Checks map[string]bool
}

// Store keeps the expected inventory across reboots (persist's
// CrossBootFile beside the state file).
type Store interface {
	Path() string
	Load() ([]byte, error)
	// Quarantine sets an unusable file aside and says where.
	Quarantine() string
	SaveIfChanged(b []byte) (bool, error)
}

// Check judges the PCI inventory on state polls (step "inventory", under
// NICInventoryCheck in the boundary; its events carry the state check of
// the function's link layer): the functions and drift whenever the
// observer scanned, the expected compute ports whenever their count moves
// or a shortfall is on hold. A quiet poll costs one loop over the ports.
type Check struct {
	cfg  Config
	log  *slog.Logger
	boot string
	mem  *Memory
	exp  *Expected
	// store keeps exp across reboots; nil in the one-shot check, which
	// remembers nothing.
	store    Store
	expDirty bool
	saveErr  string
	// lastGood is the compute ports counted at the last judgement (-1:
	// none yet); expect the expectation at the last judgement of
	// functions (it moves only with the configuration or the matrix).
	lastGood int
	expect   Expectation
	// known says what the port checks remember of a NIC by PCI address
	// (nil: nothing).
	known func(addr string) KnownNIC
}

// NewCheck returns the check with empty memory and no expectations;
// bootID is the running boot.
func NewCheck(log *slog.Logger, bootID string) *Check {
	return &Check{log: log, boot: bootID, mem: NewMemory(), exp: NewExpected(), lastGood: -1}
}

// Configure applies [inventory].
func (c *Check) Configure(cfg Config) { c.cfg = cfg }

// UseKnown says where the check learns what the port checks remember of
// the NIC a function had this boot: its name and last known ports, which
// the one condition of its loss names, and whether they already reported
// it disappeared.
func (c *Check) UseKnown(f func(addr string) KnownNIC) { c.known = f }

// Reports says whether the loss of the NIC function at addr is this
// check's to report (Memory.Reports), while the check is on.
func (c *Check) Reports(addr string) bool { return c.cfg.Enabled && c.mem.Reports(addr) }

// Memory is what the check remembers within the boot; Expected what it
// expects across boots.
func (c *Check) Memory() *Memory     { return c.mem }
func (c *Check) Expected() *Expected { return c.exp }

func (*Check) Step() string { return "inventory" }

func (*Check) Serves() []string { return []string{event.NICInventoryCheck} }

// UseStore loads the expected inventory from store and keeps it there. An
// unusable file is set aside and the check starts without expectations.
func (c *Check) UseStore(store Store) {
	c.store = store
	b, err := store.Load()
	if err == nil && b != nil {
		err = decodeExpected(b, c.exp)
	}
	if err != nil {
		kept := store.Quarantine()
		c.log.Warn("expected NIC inventory unusable; starting without it, so a card missing since the last boot is not recognised this time",
			"file", store.Path(), "err", err, "kept_copy", kept)
		c.exp = NewExpected()
		return
	}
	if dropped := c.exp.Validate(); len(dropped) > 0 {
		c.log.Warn("expected NIC inventory entries dropped as invalid", "file", store.Path(), "dropped", dropped)
	}
	c.log.Info("expected NIC inventory loaded", "file", store.Path(), "functions", len(c.exp.Functions))
}

func decodeExpected(b []byte, exp *Expected) error {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Version > ExpectedVersion {
		return fmt.Errorf("version %d is newer than this build's %d", probe.Version, ExpectedVersion)
	}
	return json.Unmarshal(b, exp)
}

// Run judges the inventory on a state poll.
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	if !obs.StatePoll {
		return
	}
	cy.Enter(event.NICInventoryCheck)
	mem := c.mem
	if !c.cfg.Enabled {
		if len(mem.Functions)+len(mem.Drift) > 0 || mem.Ports.Raised || !mem.Ports.ShortSince.IsZero() {
			cy.Emit(c.clearAll("the inventory check was switched off (inventory.enabled = false)")...)
			cy.Changed()
		}
		c.lastGood = -1
		return
	}
	ports := false
	if inv := obs.Inventory; inv != nil && (inv.Scanned || len(mem.pending) > 0) {
		// A failure waiting for its enumerations is judged again at every
		// poll on the last scan: a device that came back made discovery
		// scan again.
		ports = true
		c.expect = c.expectation(obs)
		ss, ch, ech := JudgeFunctions(mem, c.exp, Scan{Functions: inv.Functions, Complete: inv.Complete, Enumerated: obs.Enumerated,
			Boot: c.boot, Now: obs.Now, Known: c.known, LostHold: c.cfg.LostHold})
		ds, dch := JudgeDrift(mem, c.driftCards(obs.Devices, obs.LinkStory.Infos), c.cfg.FirmwareDrift)
		cy.Emit(ss...)
		cy.Emit(ds...)
		if ch || dch {
			cy.Changed()
		}
		if ch || dch || ech {
			cy.ViewChanged()
		}
		c.expDirty = c.expDirty || ech
	}
	good := c.goodComputePorts(obs)
	holding := !mem.Ports.ShortSince.IsZero() && !mem.Ports.Raised
	if ports || holding || good != c.lastGood {
		c.lastGood = good
		ss, ch := JudgePorts(mem, c.portsInput(obs))
		cy.Emit(ss...)
		if ch {
			cy.Changed()
		}
	}
	if c.expDirty {
		c.SaveExpected()
	}
}

// clearAll clears every inventory condition (the check was switched off):
// every raise has its clear.
func (c *Check) clearAll(why string) []event.Spec {
	out := ClearAll(c.mem, why)
	ds, _ := JudgeDrift(c.mem, nil, false)
	out = append(out, ds...)
	ps, _ := JudgePorts(c.mem, PortsInput{})
	return append(out, ps...)
}

// driftCards are the monitored cards whose state check is on (--checks),
// each with the PSID its slot held before a swap this boot and with what
// sysfs did not say taken from devlink (fw.psid, the running fw.version).
func (c *Check) driftCards(devs []*topology.Device, infos []devlink.Info) []Card {
	cards := FillFromDevlink(CardsOf(devs), devs, infos)
	out := cards[:0]
	for _, cd := range cards {
		if c.cfg.Checks[event.StateCheckFor(cd.LinkLayer)] {
			cd.SwappedFrom = c.exp.Swapped(cd.Address, c.boot)
			out = append(out, cd)
		}
	}
	return out
}

// expectation is the node's expected compute ports: the operator's, or the
// GPU model's documented complement.
func (c *Check) expectation(obs *observe.Observation) Expectation {
	cfg := c.cfg
	if cfg.ExpectedPorts == ModelDefault {
		var e Expectation
		ok := false
		// The documented complements are InfiniBand builds (DGX, HGX);
		// a RoCE compute fabric (the clouds' A100 and H100 shapes) is
		// built to the provider's own numbers, which only the operator
		// can give.
		if obs.Matrix != nil && computeLinkLayer(obs) == topology.LinkLayerInfiniBand {
			e, ok = DefaultExpectation(obs.Matrix.GPUs)
		}
		if ok && cfg.ExpectedRateGbps != ModelDefault {
			e.RateGbps = cfg.ExpectedRateGbps
		}
		return e
	}
	rate := max(cfg.ExpectedRateGbps, 0)
	return Expectation{Ports: cfg.ExpectedPorts, RateGbps: rate,
		Why: fmt.Sprintf("inventory.expectedComputePorts = %d, expectedComputeRateGbps = %g", cfg.ExpectedPorts, rate)}
}

// computeLinkLayer is the link layer of the first compute port ("" when
// there is none).
func computeLinkLayer(obs *observe.Observation) string {
	for _, p := range obs.Ports {
		if p.Device.Role == topology.RoleCompute {
			return p.Port.LinkLayer
		}
	}
	return ""
}

// goodComputePorts counts the compute ports up at the expected rate; it
// allocates nothing.
func (c *Check) goodComputePorts(obs *observe.Observation) int {
	n := 0
	for _, p := range obs.Ports {
		if p.Device.Role == topology.RoleCompute && p.Up() && p.RateGbps >= c.expect.RateGbps {
			n++
		}
	}
	return n
}

// portsInput is the expected-ports check's view of the compute ports.
func (c *Check) portsInput(obs *observe.Observation) PortsInput {
	in := PortsInput{Expect: c.expect, Hold: c.cfg.Hold, Now: obs.Now, Check: event.StateCheckFor(topology.LinkLayerInfiniBand)}
	first := true
	for _, p := range obs.Ports {
		if p.Device.Role != topology.RoleCompute {
			continue
		}
		if first {
			in.Check, first = event.StateCheckFor(p.Port.LinkLayer), false
		}
		cp := ComputePort{Device: p.Device.Name, Port: p.Port.Num, Active: p.Up(), RateGbps: p.RateGbps}
		if p.Observed {
			cp.State = p.Link.State.Name + "/" + p.Link.Phys.Name
		}
		in.Ports = append(in.Ports, cp)
	}
	if obs.Inventory != nil {
		for _, f := range obs.Inventory.Functions {
			if !f.IsVF && f.LeftAlone == "" && f.Device == "" && f.Role == topology.RoleCompute && f.State() != pci.Healthy {
				in.Missing = append(in.Missing, "NIC function "+f.Address)
			}
		}
	}
	return in
}

// AcknowledgeFunction is the operator's word that the function at addr
// was removed on purpose (Acknowledge); the expected inventory is saved
// with SaveExpected once the clear is durable.
func (c *Check) AcknowledgeFunction(addr, who string) ([]event.Spec, error) {
	if specs, ok := AcknowledgeSwap(c.mem, c.exp, addr, c.boot, who); ok {
		c.expDirty = true
		return specs, nil
	}
	specs, err := Acknowledge(c.mem, c.exp, addr, who)
	if err == nil {
		c.expDirty = true
	}
	return specs, err
}

// SaveExpected writes the expected inventory when it changed; a failure is
// logged once per episode and retried at the next judgement.
func (c *Check) SaveExpected() {
	if c.store == nil {
		c.expDirty = false
		return
	}
	b, err := json.MarshalIndent(c.exp, "", "  ")
	if err == nil {
		_, err = c.store.SaveIfChanged(append(b, '\n'))
	}
	if err != nil {
		if c.saveErr == "" {
			c.log.Error("cannot save the expected NIC inventory; retried at the next inventory judgement", "file", c.store.Path(), "err", err)
		}
		c.saveErr = err.Error()
		return
	}
	if c.saveErr != "" {
		c.log.Info("expected NIC inventory saved again", "file", c.store.Path())
		c.saveErr = ""
	}
	c.expDirty = false
}

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events to the memory.
func (c *Check) Replay(e *event.Event) { c.mem.Replay(e) }
