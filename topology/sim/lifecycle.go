package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// removedDir keeps what RemoveDevice took away, so RestoreDevice can put
// back the very same tree.
const removedDir = ".removed"

type removal struct {
	Devices []string  `json:"devices"`
	Links   []linkRec `json:"links"` // removed symlinks, paths relative to H
	Moves   []moveRec `json:"moves"` // from: original place, to: place under .removed
	// Created are paths (relative to H) that a detach made (another
	// driver's links): RestoreDevice removes them first, newest first.
	Created []string `json:"created,omitempty"`
}

type linkRec struct{ Path, Target string }
type moveRec struct{ From, To string }

// RemoveDevice simulates a NIC falling off the PCI bus: the
// class/infiniband link, the PCI function directory (with its infiniband,
// net and character-device class dirs), bus/pci links, class/net links and
// /dev/infiniband nodes all disappear. A PF takes its VFs with it.
//   - nil: removed; RestoreDevice(dev) undoes it;
//   - error: unknown or already removed device, or a file operation failed.
func (h *Host) RemoveDevice(dev string) error { return h.takeAway(dev, "") }

// Detach modes: what DetachFunction leaves of a function on the bus.
const (
	// DetachUnbound: no driver (the probe failed at boot, or someone
	// wrote the address to the driver's unbind file).
	DetachUnbound = "unbound"
	// DetachNoRDMA: still bound to mlx5_core, without an RDMA device
	// (mlx5_ib not loaded, or failed on this function). An Ethernet
	// function keeps its netdevs; an InfiniBand one has none (IPoIB needs
	// the RDMA device).
	DetachNoRDMA = "no-rdma"
	// DetachDriverPrefix + NAME: bound to driver NAME instead (vfio-pci).
	DetachDriverPrefix = "driver:"
)

// DetachFunction takes dev's RDMA device away while its PCI function stays
// on the bus (mode: DetachUnbound, DetachNoRDMA, or DetachDriverPrefix +
// a driver name): class/infiniband, the function's infiniband and
// character-device class dirs and /dev/infiniband nodes go; the netdevs
// and the driver link go with them unless the mode keeps them. Its VFs
// leave the bus (the PF's driver owned SR-IOV). RestoreDevice(dev) undoes
// it.
func (h *Host) DetachFunction(dev, mode string) error {
	if mode != DetachUnbound && mode != DetachNoRDMA && !(strings.HasPrefix(mode, DetachDriverPrefix) && len(mode) > len(DetachDriverPrefix)) {
		return fmt.Errorf("detach %s: mode %q is not %s, %s or %sNAME", dev, mode, DetachUnbound, DetachNoRDMA, DetachDriverPrefix)
	}
	if drv, ok := strings.CutPrefix(mode, DetachDriverPrefix); ok && (strings.ContainsAny(drv, "/ ") || drv == "." || drv == "..") {
		return fmt.Errorf("detach %s: bad driver name %q", dev, drv)
	}
	return h.takeAway(dev, mode)
}

// takeAway removes dev (mode "") or detaches it (DetachFunction's modes),
// recording everything for RestoreDevice.
func (h *Host) takeAway(dev, mode string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(dev)
	if err != nil {
		return err
	}
	if mode != "" && d.IsVF {
		return fmt.Errorf("detach %s: a VF is never judged; detach its PF", dev)
	}
	recDir := filepath.Join(h.Root, removedDir, dev)
	if _, err := os.Lstat(recDir); err == nil {
		return fmt.Errorf("device %s: %s already exists; restore or delete it first", dev, recDir)
	}
	set := []*DeviceInfo{d}
	if !d.IsVF {
		for i := range h.m.Devices {
			v := &h.m.Devices[i]
			if v.IsVF && v.PhysFn == d.PCIAddress && !v.Removed {
				set = append(set, v)
			}
		}
	}
	t := &taker{h: h, dev: dev, recDir: recDir}
	for i, x := range set {
		m := ""
		if i == 0 {
			m = mode
		}
		t.rec.Devices = append(t.rec.Devices, x.Name)
		if err := t.take(x, m); err != nil {
			return err
		}
		x.Removed = true
		x.Detached = m
	}
	b, err := json.MarshalIndent(t.rec, "", "  ")
	if err != nil {
		return fmt.Errorf("remove %s: %w", dev, err)
	}
	if err := writeAtomic(h.Root, filepath.Join(recDir, "record.json"), b); err != nil {
		return err
	}
	return h.saveManifest()
}

// taker does the file work of takeAway and records it.
type taker struct {
	h      *Host
	dev    string
	recDir string
	rec    removal
}

// rm removes the symlink at rel (relative to H), recording it.
func (t *taker) rm(rel string) error {
	p := filepath.Join(t.h.Root, rel)
	target, err := os.Readlink(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", t.dev, err)
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("remove %s: %w", t.dev, err)
	}
	t.rec.Links = append(t.rec.Links, linkRec{Path: rel, Target: target})
	return nil
}

// mv moves rel under the record directory as to, recording it; a missing
// rel is no error.
func (t *taker) mv(rel, to string) error {
	if _, err := os.Lstat(filepath.Join(t.h.Root, rel)); os.IsNotExist(err) {
		return nil
	}
	dst := filepath.Join(t.recDir, to)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("remove %s: %w", t.dev, err)
	}
	if err := os.Rename(filepath.Join(t.h.Root, rel), dst); err != nil {
		return fmt.Errorf("remove %s: %w", t.dev, err)
	}
	t.rec.Moves = append(t.rec.Moves, moveRec{From: rel, To: filepath.Join(removedDir, t.dev, to)})
	return nil
}

// link creates a symlink at rel pointing at target (both relative to H,
// the link written relative as sysfs does), recording it for removal.
func (t *taker) link(rel, target string) error {
	p := filepath.Join(t.h.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("detach %s: %w", t.dev, err)
	}
	r, err := filepath.Rel(filepath.Dir(p), filepath.Join(t.h.Root, target))
	if err != nil {
		return fmt.Errorf("detach %s: %w", t.dev, err)
	}
	if err := os.Symlink(r, p); err != nil {
		return fmt.Errorf("detach %s: %w", t.dev, err)
	}
	t.rec.Created = append(t.rec.Created, rel)
	return nil
}

// take removes x from the host (mode "") or detaches its RDMA device.
func (t *taker) take(x *DeviceInfo, mode string) error {
	pci := filepath.Join("sys", x.PCIPath)
	// The class link goes first: it is what discovery enumerates.
	if err := t.rm(filepath.Join("sys/class/infiniband", x.Name)); err != nil {
		return err
	}
	keepNet := mode == DetachNoRDMA && x.LinkLayer == topology.LinkLayerEthernet
	if !keepNet {
		if err := t.netdevs(x); err != nil {
			return err
		}
	}
	for _, cls := range []string{"infiniband_verbs", "infiniband_mad"} {
		ents, _ := os.ReadDir(filepath.Join(t.h.Root, pci, cls))
		for _, e := range ents {
			if err := t.rm(filepath.Join("sys/class", cls, e.Name())); err != nil {
				return err
			}
			if err := t.mv(filepath.Join("dev/infiniband", e.Name()), filepath.Join("dev", e.Name())); err != nil {
				return err
			}
		}
	}
	if mode != "" {
		return t.detach(x, pci, mode, keepNet)
	}
	if err := t.rm(filepath.Join("sys/bus/pci/devices", x.PCIAddress)); err != nil {
		return err
	}
	if err := t.rm(filepath.Join("sys/bus/pci/drivers", x.Driver, x.PCIAddress)); err != nil {
		return err
	}
	if x.IsVF {
		virt, _ := filepath.Glob(filepath.Join(t.h.Root, "sys", filepath.Dir(x.PCIPath), x.PhysFn, "virtfn*"))
		for _, v := range virt {
			if target, err := os.Readlink(v); err == nil && filepath.Base(target) == x.PCIAddress {
				rel, _ := filepath.Rel(t.h.Root, v)
				if err := t.rm(rel); err != nil {
					return err
				}
			}
		}
	}
	return t.mv(pci, filepath.Join("pci", x.PCIAddress))
}

// netdevs removes x's class/net links and any bond's lower_ link to them.
func (t *taker) netdevs(x *DeviceInfo) error {
	for _, nd := range x.NetDevs {
		if err := t.rm(filepath.Join("sys/class/net", nd)); err != nil {
			return err
		}
		lowers, _ := filepath.Glob(filepath.Join(t.h.Root, "sys/devices/virtual/net/*/lower_"+nd))
		for _, l := range lowers {
			rel, _ := filepath.Rel(t.h.Root, l)
			if err := t.rm(rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// detach leaves x's PCI function on the bus without its RDMA device.
func (t *taker) detach(x *DeviceInfo, pci, mode string, keepNet bool) error {
	for _, sub := range []string{"infiniband", "infiniband_verbs", "infiniband_mad"} {
		if err := t.mv(filepath.Join(pci, sub), filepath.Join("fn", sub)); err != nil {
			return err
		}
	}
	if !keepNet {
		if err := t.mv(filepath.Join(pci, "net"), filepath.Join("fn", "net")); err != nil {
			return err
		}
	}
	if mode == DetachNoRDMA {
		return nil
	}
	if err := t.rm(filepath.Join(pci, "driver")); err != nil {
		return err
	}
	if err := t.rm(filepath.Join("sys/bus/pci/drivers", x.Driver, x.PCIAddress)); err != nil {
		return err
	}
	drv, ok := strings.CutPrefix(mode, DetachDriverPrefix)
	if !ok {
		return nil
	}
	dir := filepath.Join("sys/bus/pci/drivers", drv)
	if _, err := os.Stat(filepath.Join(t.h.Root, dir)); os.IsNotExist(err) {
		if err := os.MkdirAll(filepath.Join(t.h.Root, dir), 0o755); err != nil {
			return fmt.Errorf("detach %s: %w", t.dev, err)
		}
		t.rec.Created = append(t.rec.Created, dir)
	}
	if err := t.link(filepath.Join(pci, "driver"), dir); err != nil {
		return err
	}
	return t.link(filepath.Join(dir, x.PCIAddress), pci)
}

// RestoreDevice brings back what RemoveDevice(dev) took away, same PCI
// address, GUID, counters and state files, in reverse order (the class
// link last, as a hot-plugged device appears).
func (h *Host) RestoreDevice(dev string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	recDir := filepath.Join(h.Root, removedDir, dev)
	b, err := os.ReadFile(filepath.Join(recDir, "record.json"))
	if err != nil {
		return fmt.Errorf("restore %s: it was not removed by RemoveDevice (%w)", dev, err)
	}
	var rec removal
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("restore %s: corrupt %s: %w", dev, filepath.Join(recDir, "record.json"), err)
	}
	for i := len(rec.Created) - 1; i >= 0; i-- {
		if err := os.Remove(filepath.Join(h.Root, rec.Created[i])); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("restore %s: %w", dev, err)
		}
	}
	for i := len(rec.Moves) - 1; i >= 0; i-- {
		m := rec.Moves[i]
		if err := os.Rename(filepath.Join(h.Root, m.To), filepath.Join(h.Root, m.From)); err != nil {
			return fmt.Errorf("restore %s: %w", dev, err)
		}
	}
	for i := len(rec.Links) - 1; i >= 0; i-- {
		l := rec.Links[i]
		if err := os.Symlink(l.Target, filepath.Join(h.Root, l.Path)); err != nil {
			return fmt.Errorf("restore %s: %w", dev, err)
		}
	}
	for _, name := range rec.Devices {
		for i := range h.m.Devices {
			if h.m.Devices[i].Name == name {
				h.m.Devices[i].Removed = false
				h.m.Devices[i].Detached = ""
			}
		}
	}
	if err := os.RemoveAll(recDir); err != nil {
		return fmt.Errorf("restore %s: %w", dev, err)
	}
	return h.saveManifest()
}

// RenameDevice gives an ib device a new name, keeping its PCI address,
// GUID and files (names are not stable across boots, DESIGN.md section 2):
// infiniband/<old> becomes infiniband/<new>, the class link moves, and the
// character-device ibdev files follow. The metadata file is not rewritten
// (the collector ran before); call WriteMetadata to refresh it.
func (h *Host) RenameDevice(oldName, newName string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(oldName)
	if err != nil {
		return err
	}
	if newName == "" || strings.ContainsAny(newName, "/\n ") || newName == "." || newName == ".." {
		return fmt.Errorf("bad device name %q", newName)
	}
	for _, x := range h.m.Devices {
		if x.Name == newName {
			return fmt.Errorf("rename %s: %s already exists", oldName, newName)
		}
	}
	pci := filepath.Join(h.SysRoot(), d.PCIPath)
	oldDir := filepath.Join(pci, "infiniband", oldName)
	newDir := filepath.Join(pci, "infiniband", newName)
	if err := os.Rename(oldDir, newDir); err != nil {
		return fmt.Errorf("rename %s: %w", oldName, err)
	}
	cls := filepath.Join(h.SysRoot(), "class", "infiniband")
	target, err := filepath.Rel(cls, newDir)
	if err != nil {
		return fmt.Errorf("rename %s: %w", oldName, err)
	}
	if err := os.Symlink(target, filepath.Join(cls, newName)); err != nil {
		return fmt.Errorf("rename %s: %w", oldName, err)
	}
	if err := os.Remove(filepath.Join(cls, oldName)); err != nil {
		return fmt.Errorf("rename %s: %w", oldName, err)
	}
	ibdevs, _ := filepath.Glob(filepath.Join(pci, "infiniband_*", "*", "ibdev"))
	for _, f := range ibdevs {
		if err := writeAtomic(h.Root, f, []byte(newName+"\n")); err != nil {
			return err
		}
	}
	d.Name = newName
	for i := range h.m.NetDevs {
		if h.m.NetDevs[i].Device == oldName {
			h.m.NetDevs[i].Device = newName
		}
	}
	return h.saveManifest()
}
