package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// removedDir keeps what RemoveDevice took away, so RestoreDevice can put
// back the very same tree.
const removedDir = ".removed"

type removal struct {
	Devices []string  `json:"devices"`
	Links   []linkRec `json:"links"` // removed symlinks, paths relative to H
	Moves   []moveRec `json:"moves"` // from: original place, to: place under .removed
}

type linkRec struct{ Path, Target string }
type moveRec struct{ From, To string }

// RemoveDevice simulates a NIC falling off the PCI bus: the
// class/infiniband link, the PCI function directory (with its infiniband,
// net and character-device class dirs), bus/pci links, class/net links and
// /dev/infiniband nodes all disappear. A PF takes its VFs with it.
//   - nil: removed; RestoreDevice(dev) undoes it;
//   - error: unknown or already removed device, or a file operation failed.
func (h *Host) RemoveDevice(dev string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(dev)
	if err != nil {
		return err
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
	rec := removal{}
	rm := func(rel string) error {
		p := filepath.Join(h.Root, rel)
		t, err := os.Readlink(p)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("remove %s: %w", dev, err)
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove %s: %w", dev, err)
		}
		rec.Links = append(rec.Links, linkRec{Path: rel, Target: t})
		return nil
	}
	mv := func(rel, to string) error {
		dst := filepath.Join(recDir, to)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("remove %s: %w", dev, err)
		}
		if err := os.Rename(filepath.Join(h.Root, rel), dst); err != nil {
			return fmt.Errorf("remove %s: %w", dev, err)
		}
		rec.Moves = append(rec.Moves, moveRec{From: rel, To: filepath.Join(removedDir, dev, to)})
		return nil
	}
	for _, x := range set {
		rec.Devices = append(rec.Devices, x.Name)
		pci := filepath.Join("sys", x.PCIPath)
		// The class link goes first: it is what discovery enumerates.
		if err := rm(filepath.Join("sys/class/infiniband", x.Name)); err != nil {
			return err
		}
		for _, nd := range x.NetDevs {
			if err := rm(filepath.Join("sys/class/net", nd)); err != nil {
				return err
			}
			lowers, _ := filepath.Glob(filepath.Join(h.Root, "sys/devices/virtual/net/*/lower_"+nd))
			for _, l := range lowers {
				rel, _ := filepath.Rel(h.Root, l)
				if err := rm(rel); err != nil {
					return err
				}
			}
		}
		for _, cls := range []string{"infiniband_verbs", "infiniband_mad"} {
			ents, _ := os.ReadDir(filepath.Join(h.Root, pci, cls))
			for _, e := range ents {
				if err := rm(filepath.Join("sys/class", cls, e.Name())); err != nil {
					return err
				}
				if err := mv(filepath.Join("dev/infiniband", e.Name()), filepath.Join("dev", e.Name())); err != nil && !os.IsNotExist(unwrapAll(err)) {
					return err
				}
			}
		}
		if err := rm(filepath.Join("sys/bus/pci/devices", x.PCIAddress)); err != nil {
			return err
		}
		if err := rm(filepath.Join("sys/bus/pci/drivers", x.Driver, x.PCIAddress)); err != nil {
			return err
		}
		if x.IsVF {
			virt, _ := filepath.Glob(filepath.Join(h.Root, "sys", filepath.Dir(x.PCIPath), x.PhysFn, "virtfn*"))
			for _, v := range virt {
				if t, err := os.Readlink(v); err == nil && filepath.Base(t) == x.PCIAddress {
					rel, _ := filepath.Rel(h.Root, v)
					if err := rm(rel); err != nil {
						return err
					}
				}
			}
		}
		if err := mv(pci, filepath.Join("pci", x.PCIAddress)); err != nil {
			return err
		}
		x.Removed = true
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("remove %s: %w", dev, err)
	}
	if err := writeAtomic(h.Root, filepath.Join(recDir, "record.json"), b); err != nil {
		return err
	}
	return h.saveManifest()
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		next := u.Unwrap()
		if next == nil {
			return err
		}
		err = next
	}
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
