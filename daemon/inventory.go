package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	cinv "github.com/nichealth/nichealthd/checks/inventory"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
	pci "github.com/nichealth/nichealthd/topology/inventory"
	"github.com/nichealth/nichealthd/topology/roles"
)

// inventoryInterval is how often the PCI inventory is scanned besides
// every discovery. Discovery runs whenever class/infiniband changes, which
// covers a function that loses or regains its RDMA device; a function that
// never had one (a failed probe, a card hot-added unbound, one rebound from
// vfio-pci to nothing) changes nothing there, so only this cadence sees it.
// It is the sanity pass's minute: these are boot and maintenance events,
// a minute is well inside any drain decision, and a scan reads one vendor
// file per PCI function (every function on the bus, a few ms).
const inventoryInterval = time.Minute

// inventoryState is the PCI inventory between scans and the expected
// inventory that outlives reboots.
type inventoryState struct {
	fns      []pci.Function
	complete bool
	// judge: a discovery or scan happened, or the configuration changed;
	// functions and drift are judged at the next state poll.
	judge bool
	next  time.Time
	exp   *cinv.Expected
	// file keeps exp across reboots; nil in the one-shot check, which
	// remembers nothing.
	file     *persist.CrossBootFile
	bootID   string
	expDirty bool
	saveErr  string
	// reschedule: a scan happened outside the cadence (discovery); the
	// next one is an interval after the poll that judges it.
	reschedule bool
	cfg        *config.Config // the configuration of the last scan
	lastGood   int            // compute ports counted at the last judgement
	// expect is the expectation at the last judgement of functions (it
	// moves only with the configuration or the GPU matrix).
	expect cinv.Expectation
	logged map[string]bool
}

func (m *Monitor) inventory() *inventoryState {
	if m.inv == nil {
		m.inv = &inventoryState{exp: cinv.NewExpected(), logged: map[string]bool{}, lastGood: -1}
	}
	return m.inv
}

// UseExpectedInventory loads the expected inventory from file (beside the
// state file) and keeps it there; bootID is the running boot. An unusable
// file is set aside and the daemon starts without expectations.
func (m *Monitor) UseExpectedInventory(file *persist.CrossBootFile, bootID string) {
	iv := m.inventory()
	iv.file, iv.bootID = file, bootID
	b, err := file.Load()
	if err == nil && b != nil {
		err = decodeExpected(b, iv.exp)
	}
	if err != nil {
		kept := file.Quarantine()
		m.log.Warn("expected NIC inventory unusable; starting without it, so a card missing since the last boot is not recognised this time",
			"file", file.Path(), "err", err, "kept_copy", kept)
		iv.exp = cinv.NewExpected()
		return
	}
	if dropped := iv.exp.Validate(); len(dropped) > 0 {
		m.log.Warn("expected NIC inventory entries dropped as invalid", "file", file.Path(), "dropped", dropped)
	}
	m.log.Info("expected NIC inventory loaded", "file", file.Path(), "functions", len(iv.exp.Functions))
}

func decodeExpected(b []byte, exp *cinv.Expected) error {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Version > cinv.ExpectedVersion {
		return fmt.Errorf("version %d is newer than this build's %d", probe.Version, cinv.ExpectedVersion)
	}
	return json.Unmarshal(b, exp)
}

// scanInventory lists the NIC functions on the PCI bus, joins them with
// the last discovery and gives the ones without an RDMA device their role.
// The next scan is a full interval after the state poll that judges this
// one (the poll's clock, not the wall clock: discovery has none).
func (m *Monitor) scanInventory() {
	iv := m.inventory()
	iv.judge, iv.reschedule, iv.cfg = true, true, m.cfg
	fns, probs, err := pci.Scan(m.cfg.Paths.SysfsRoot, m.readInventoryFile)
	iv.complete = err == nil
	if err != nil {
		m.logInventoryOnce("scan", "cannot list the PCI bus; NIC functions missing from it are not judged until listing works again",
			"err", err, "fix", "check that sysfsRoot is the host's sysfs (bus/pci/devices must be readable)")
		return
	}
	delete(iv.logged, "scan")
	for _, p := range probs {
		m.logInventoryOnce("problem "+p.File, "cannot read a PCI attribute of a NIC function; it is judged without it",
			"pci", p.Device, "file", p.File, "err", p.Err)
	}
	pci.Attach(fns, m.devices, m.cfg.Filter, iv.exp.LastName)
	routes, rerr := roles.DefaultRouteNetdevs(m.cfg.Paths)
	if rerr != nil {
		m.logInventoryOnce("routes", "cannot read the default route for the NIC inventory", "err", rerr)
	}
	pci.Classify(fns, m.matrix, m.cfg.Filter.Overridden(), m.cfg.Paths, routes, m.readFile)
	for i := range fns {
		if f := &fns[i]; f.LeftAlone == "" && !m.cfg.Checks[checks.StateCheckFor(f.LinkLayer())] {
			// A function's conditions are its link layer's state check's.
			f.LeftAlone = checks.StateCheckFor(f.LinkLayer()) + " is switched off (--checks)"
		}
	}
	for i := range fns {
		if fns[i].VPDErr == "permission denied" && !fns[i].IsVF {
			m.logInventoryOnce("vpd", "cannot read the PCI VPD of NIC functions (root-only by default): serial numbers stay unknown "+
				"and Fabric Manager limited PFs are recognised by parking their counters instead",
				"pci", fns[i].Address, "fix", "install the package's udev rule (group read access to the VPD of 0x15b3 functions) or run the daemon as root")
			break
		}
	}
	iv.fns = fns
}

// readInventoryFile is the scan's read: the reader's deadline, a buffer
// the size of what the file can hold (a vendor or class file is a few
// bytes; VPD up to a page), so a scan of every function on the bus does
// not allocate a page per file.
func (m *Monitor) readInventoryFile(path string) ([]byte, error) {
	if filepath.Base(path) == "vpd" {
		return m.rd.ReadFile(path, 0)
	}
	return m.rd.ReadFile(path, 64)
}

func (m *Monitor) logInventoryOnce(key, msg string, args ...any) {
	iv := m.inventory()
	if iv.logged[key] {
		return
	}
	iv.logged[key] = true
	m.log.Warn(msg, args...)
}

// inventoryCycle judges the inventory on a state poll: functions and
// drift after a discovery or scan (a scan when its cadence is due), the
// expected compute ports whenever their count moves or a shortfall is on
// hold. A quiet poll costs one loop over the plan's ports.
func (m *Monitor) inventoryCycle(now time.Time, specs *[]event.Spec, changed *bool) {
	iv := m.inventory()
	mem := m.mem.Inventory
	if !m.cfg.Inventory.Enabled {
		if len(mem.Functions)+len(mem.Drift) > 0 || mem.Ports.Raised || !mem.Ports.ShortSince.IsZero() {
			*specs = append(*specs, m.clearInventory("the inventory check was switched off (inventory.enabled = false)")...)
			*changed = true
		}
		return
	}
	if iv.cfg != m.cfg || !iv.reschedule && !now.Before(iv.next) {
		// Due, or a reload: the filter, --checks or [inventory] may have
		// changed what is judged and how.
		m.scanInventory()
	}
	if iv.reschedule {
		iv.next, iv.reschedule = now.Add(inventoryInterval), false
	}
	ports := false
	if iv.judge {
		iv.judge, ports = false, true
		iv.expect = m.expectation()
		ss, ch, ech := cinv.JudgeFunctions(mem, iv.exp, cinv.Scan{Functions: iv.fns, Complete: iv.complete, Boot: iv.bootID, Now: now})
		ds, dch := cinv.JudgeDrift(mem, m.driftCards(), m.cfg.Inventory.FirmwareDrift)
		*specs = append(append(*specs, ss...), ds...)
		*changed = *changed || ch || dch
		iv.expDirty = iv.expDirty || ech
		m.viewChanged = m.viewChanged || ch || dch || ech
	}
	good := m.goodComputePorts()
	holding := !mem.Ports.ShortSince.IsZero() && !mem.Ports.Raised
	if ports || holding || good != iv.lastGood {
		iv.lastGood = good
		ss, ch := cinv.JudgePorts(mem, m.portsInput(now))
		*specs = append(*specs, ss...)
		*changed = *changed || ch
	}
	if iv.expDirty {
		m.saveExpected()
	}
}

// driftCards are the monitored cards whose state check is on (--checks).
func (m *Monitor) driftCards() []cinv.Card {
	cards := cinv.CardsOf(m.devices)
	out := cards[:0]
	for _, c := range cards {
		if m.cfg.Checks[checks.StateCheckFor(c.LinkLayer)] {
			out = append(out, c)
		}
	}
	return out
}

// clearInventory clears every inventory condition (the check was switched
// off): every raise has its clear.
func (m *Monitor) clearInventory(why string) []event.Spec {
	mem := m.mem.Inventory
	out := cinv.ClearAll(mem, why)
	ds, _ := cinv.JudgeDrift(mem, nil, false)
	out = append(out, ds...)
	ps, _ := cinv.JudgePorts(mem, cinv.PortsInput{})
	return append(out, ps...)
}

// expectation is the node's expected compute ports: the operator's, or the
// GPU model's documented complement.
func (m *Monitor) expectation() cinv.Expectation {
	c := m.cfg.Inventory
	if c.ExpectedPorts == config.ModelDefault {
		var e cinv.Expectation
		ok := false
		// The documented complements are InfiniBand builds (DGX, HGX);
		// a RoCE compute fabric (the clouds' A100 and H100 shapes) is
		// built to the provider's own numbers, which only the operator
		// can give.
		if m.matrix != nil && m.computeLinkLayer() == topology.LinkLayerInfiniBand {
			e, ok = cinv.DefaultExpectation(m.matrix.GPUs)
		}
		if ok && c.ExpectedRateGbps != config.ModelDefault {
			e.RateGbps = c.ExpectedRateGbps
		}
		return e
	}
	rate := max(c.ExpectedRateGbps, 0)
	return cinv.Expectation{Ports: c.ExpectedPorts, RateGbps: rate,
		Why: fmt.Sprintf("inventory.expectedComputePorts = %d, expectedComputeRateGbps = %g", c.ExpectedPorts, rate)}
}

// computeLinkLayer is the link layer of the first compute port ("" when
// there is none).
func (m *Monitor) computeLinkLayer() string {
	for _, p := range m.ports {
		if p.dev.Role == topology.RoleCompute {
			return p.port.LinkLayer
		}
	}
	return ""
}

// goodComputePorts counts the compute ports active at the expected rate;
// it allocates nothing.
func (m *Monitor) goodComputePorts() int {
	rate := m.inventory().expect.RateGbps
	n := 0
	for _, p := range m.ports {
		if p.dev.Role == topology.RoleCompute && p.active() && p.rateGbps >= rate {
			n++
		}
	}
	return n
}

// portsInput is the expected-ports check's view of the compute ports.
func (m *Monitor) portsInput(now time.Time) cinv.PortsInput {
	in := cinv.PortsInput{Expect: m.inventory().expect, Hold: m.cfg.Inventory.Hold, Now: now, Check: checks.StateCheckFor(topology.LinkLayerInfiniBand)}
	first := true
	for _, p := range m.ports {
		if p.dev.Role != topology.RoleCompute {
			continue
		}
		if first {
			in.Check, first = checks.StateCheckFor(p.port.LinkLayer), false
		}
		cp := cinv.ComputePort{Device: p.dev.Name, Port: p.port.Num, Active: p.active(), RateGbps: p.rateGbps}
		if p.observed {
			cp.State = p.obs.State.Name + "/" + p.obs.Phys.Name
		}
		in.Ports = append(in.Ports, cp)
	}
	for _, f := range m.inventory().fns {
		if !f.IsVF && f.LeftAlone == "" && f.Device == "" && f.Role == topology.RoleCompute && f.State() != pci.Healthy {
			in.Missing = append(in.Missing, "NIC function "+f.Address)
		}
	}
	return in
}

// saveExpected writes the expected inventory when it changed; a failure is
// logged once per episode and retried at the next judgement.
func (m *Monitor) saveExpected() {
	iv := m.inventory()
	if iv.file == nil {
		iv.expDirty = false
		return
	}
	b, err := json.MarshalIndent(iv.exp, "", "  ")
	if err == nil {
		_, err = iv.file.SaveIfChanged(append(b, '\n'))
	}
	if err != nil {
		if iv.saveErr == "" {
			m.log.Error("cannot save the expected NIC inventory; retried at the next inventory judgement", "file", iv.file.Path(), "err", err)
		}
		iv.saveErr = err.Error()
		return
	}
	if iv.saveErr != "" {
		m.log.Info("expected NIC inventory saved again", "file", iv.file.Path())
		iv.saveErr = ""
	}
	iv.expDirty = false
}

// inventoryInfos is the inventory the snapshot shows (no VFs).
func (m *Monitor) inventoryInfos() []health.NICInfo {
	if m.inv == nil {
		return nil
	}
	var out []health.NICInfo
	for _, f := range m.inv.fns {
		if f.IsVF {
			continue
		}
		out = append(out, health.NICInfo{PCI: f.Address, Device: event.Clean(f.Device), Role: string(f.Role), HCAType: event.Clean(f.HCAType),
			FWVer: event.Clean(f.FWVer), BoardID: event.Clean(f.BoardID), Serial: event.Clean(f.Serial), Driver: event.Clean(f.Driver),
			State: string(f.State()), Monitored: f.Monitored})
	}
	return out
}

// acknowledgeFunction is AcknowledgeReset with a PCI address: the NIC
// function reported gone was removed on purpose, and is forgotten.
func (d *Daemon) acknowledgeFunction(addr string, uid uint32) error {
	d.mu.Lock()
	iv := d.mon.inventory()
	specs, err := cinv.Acknowledge(d.mon.mem.Inventory, iv.exp, addr, fmt.Sprintf("uid %d", uid))
	if err != nil {
		d.mu.Unlock()
		switch {
		case errors.Is(err, cinv.ErrNotRaised):
			return fmt.Errorf("%w: %v", dbusapi.ErrNotLatched, err)
		case errors.Is(err, cinv.ErrStillPresent):
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
	// inventory pass.
	iv.expDirty = true
	if len(d.held.evs) == 0 {
		d.mon.saveExpected()
	}
	d.mon.viewChanged = true
	d.publishSnapshotLocked()
	d.mu.Unlock()
	d.publish(evs)
	d.log.Info("NIC function removal acknowledged", "pci", addr, "uid", uid)
	return nil
}
