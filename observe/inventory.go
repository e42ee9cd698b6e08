package observe

import (
	"path/filepath"
	"time"

	"github.com/nichealth/nichealthd/event"
	pci "github.com/nichealth/nichealthd/topology/inventory"
	"github.com/nichealth/nichealthd/topology/roles"
)

// InventoryEvery is how often the PCI inventory is scanned besides every
// discovery and reload. Discovery runs whenever class/infiniband changes,
// which covers a function that loses or regains its RDMA device; a
// function that never had one (a failed probe, a card hot-added unbound,
// one rebound from vfio-pci to nothing) changes nothing there, so only
// this cadence sees it. It is the sanity pass's minute: these are boot and
// maintenance events, a minute is well inside any drain decision, and a
// scan reads one vendor file per PCI function (every function on the bus,
// a few ms).
const InventoryEvery = time.Minute

var inventoryChecks = []string{event.NICInventoryCheck}

// Inventory is the PCI inventory as the last scan saw it.
type Inventory struct {
	// Functions are every NVIDIA/Mellanox network function on the bus,
	// joined with discovery and classified (topology/inventory Attach and
	// Classify); a function whose link layer's state check is switched off
	// is left alone, since its conditions would be that check's.
	Functions []pci.Function
	// Complete: bus/pci/devices was listed. When it was not, nothing may
	// be judged absent (an incomplete listing is not evidence).
	Complete bool
	// Scanned: this state poll scanned (after a discovery, a reload, or
	// the cadence); the functions are judged again.
	Scanned bool
}

// inventory is the observer's side of the PCI inventory: the last scan
// and its cadence.
type inventory struct {
	last Inventory
	// due: a discovery or a reload asks for a scan at the next state
	// poll; next is when the cadence's is due.
	due  bool
	next time.Time
	// lastName is the RDMA device name a function had before (the
	// inventory check's expected inventory), so the NIC filter can match
	// a function that has none now.
	lastName func(addr string) string
	logged   map[string]bool
	// vpd holds each function's VPD as read, by path (readVPD).
	vpd map[string][]byte
}

// UseLastNames says where the scan learns the RDMA device name a function
// had when it has none now (nicExclusionRegex may name either).
func (o *Observer) UseLastNames(f func(addr string) string) { o.inv.lastName = f }

// Inventory is the PCI inventory as the last scan saw it (nothing when the
// inventory is switched off).
func (o *Observer) Inventory() *Inventory { return &o.inv.last }

// inventoryStep scans the PCI bus on a state poll when a discovery or a
// reload asked for it or the cadence is due; the next scan is a full
// interval later.
func (o *Observer) inventoryStep() {
	iv := &o.inv
	obs := &o.obs
	iv.last.Scanned = false
	if !o.cfg.Inventory {
		iv.last, iv.due = Inventory{}, true
		obs.Inventory = &iv.last
		return
	}
	if iv.due || !obs.Now.Before(iv.next) {
		iv.due = false
		iv.next = obs.Now.Add(InventoryEvery)
		o.scanInventory()
		iv.last.Scanned = true
	}
	obs.Inventory = &iv.last
}

// scanInventory lists the NIC functions on the PCI bus, joins them with
// the last discovery and gives the ones without an RDMA device their role.
func (o *Observer) scanInventory() {
	iv := &o.inv
	fns, probs, err := pci.Scan(o.cfg.Paths.SysfsRoot, o.readInventoryFile)
	iv.last.Complete = err == nil
	if err != nil {
		iv.last.Functions = nil
		o.logInventoryOnce("scan", "cannot list the PCI bus; NIC functions missing from it are not judged until listing works again",
			"err", err, "fix", "check that sysfsRoot is the host's sysfs (bus/pci/devices must be readable)")
		return
	}
	delete(iv.logged, "scan")
	o.keepVPDOf(fns)
	for _, p := range probs {
		o.logInventoryOnce("problem "+p.File, "cannot read a PCI attribute of a NIC function; it is judged without it",
			"pci", p.Device, "file", p.File, "err", p.Err)
	}
	pci.Attach(fns, o.devices, o.cfg.Filter, iv.lastName)
	routes, rerr := roles.DefaultRouteNetdevs(o.cfg.Paths)
	if rerr != nil {
		o.logInventoryOnce("routes", "cannot read the default route for the NIC inventory", "err", rerr)
	}
	pci.Classify(fns, o.matrix, o.cfg.Filter.Overridden(), o.cfg.Paths, routes, o.readFile)
	for i := range fns {
		if f := &fns[i]; f.LeftAlone == "" && !o.cfg.Checks[event.StateCheckFor(f.LinkLayer())] {
			f.LeftAlone = event.StateCheckFor(f.LinkLayer()) + " is switched off (--checks)"
		}
	}
	for i := range fns {
		if fns[i].VPDErr == "permission denied" && !fns[i].IsVF {
			o.logInventoryOnce("vpd", "cannot read the PCI VPD of NIC functions (root-only by default): serial numbers stay unknown "+
				"and Fabric Manager limited PFs are recognised by parking their counters instead",
				"pci", fns[i].Address, "fix", "install the package's udev rule (group read access to the VPD of 0x15b3 functions) or run the daemon as root")
			break
		}
	}
	iv.last.Functions = fns
}

// readInventoryFile is the scan's read: the reader's deadline, a buffer
// the size of what the file can hold (a vendor or class file is a few
// bytes; VPD up to a page), so a scan of every function on the bus does
// not allocate a page per file.
func (o *Observer) readInventoryFile(path string) ([]byte, error) {
	if filepath.Base(path) == "vpd" {
		return o.readVPD(path)
	}
	return o.rd.ReadFile(path, 64)
}

// readDiscoveryFile is discovery's read: VPD through readVPD, the rest
// through the reader.
func (o *Observer) readDiscoveryFile(path string) ([]byte, error) {
	if filepath.Base(path) == "vpd" {
		return o.readVPD(path)
	}
	return o.readFile(path)
}

// readVPD reads a function's VPD once while it stays on the bus. Its
// serial number and limited-PF marker are burnt into the card, and a VPD
// read is slow (the kernel reads it a dword at a time through PCI config
// space, waiting on the device for each), too slow to repeat for every
// function at every minute's inventory scan and at every rediscovery, on
// the poll loop. A failed read is not kept. The copy is dropped when the
// device set changes (a hot-swap, a driver reload), at a reload, and for a
// function a scan no longer finds.
func (o *Observer) readVPD(path string) ([]byte, error) {
	if b, ok := o.inv.vpd[path]; ok {
		return b, nil
	}
	b, err := o.rd.ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	if o.inv.vpd == nil {
		o.inv.vpd = map[string][]byte{}
	}
	o.inv.vpd[path] = b
	return b, nil
}

// keepVPDOf drops the VPD copies of functions the scan did not find.
func (o *Observer) keepVPDOf(fns []pci.Function) {
	if len(o.inv.vpd) == 0 {
		return
	}
	found := make(map[string]bool, len(fns))
	for i := range fns {
		found[filepath.Join(fns[i].Dir, "vpd")] = true
	}
	for path := range o.inv.vpd {
		if !found[path] {
			delete(o.inv.vpd, path)
		}
	}
}

func (o *Observer) logInventoryOnce(key, msg string, args ...any) {
	iv := &o.inv
	if iv.logged[key] {
		return
	}
	if iv.logged == nil {
		iv.logged = map[string]bool{}
	}
	iv.logged[key] = true
	o.log.Warn(msg, args...)
}
