package ports

import (
	"fmt"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
)

// DisappearAfter is how many consecutive complete enumerations must miss a
// device before it is declared gone (DESIGN.md difference 3).
const DisappearAfter = checks.LostAfter

// Presence is what Enumerated needs to know of a device seen now.
type Presence struct {
	LinkLayer  string
	PCIAddress string
}

// Back is a device that came back before it counted as gone.
type Back struct {
	Device string
	Missed int
}

// TakeBack returns the devices that came back before they counted as
// gone since the last call (the caller logs them: a driver reload is
// worth a line, not a condition).
func (c *PortStateCheck) TakeBack() []Back {
	b := c.back
	c.back = nil
	return b
}

// goneSets are the devices reported gone, by whom.
type goneSets struct {
	// reported: the port check said "disappeared"; claimed: another check
	// reports the loss (PortStateCheck.Claimed).
	reported, claimed map[string]bool
}

// Enumerated updates device presence after a complete enumeration of
// class/infiniband. present holds every monitored device seen now. It
// returns disappearance, reappearance and rename events.
func (c *PortStateCheck) Enumerated(st *PortMemory, present map[string]Presence, classDir string) ([]event.Spec, bool) {
	if c.steady(st, present) {
		return nil, false
	}
	out, changed := c.renames(st, present, nil)
	gone := goneSets{reported: map[string]bool{}, claimed: map[string]bool{}}
	for _, d := range st.Disappeared {
		gone.reported[d] = true
	}
	for _, d := range st.Claimed {
		gone.claimed[d] = true
	}
	for _, name := range st.KnownDevices {
		s, ok, ch := c.presenceOf(st, name, present, gone, classDir)
		if ok {
			out = append(out, s)
		}
		changed = changed || ok || ch
	}
	if c.learn(st, present) {
		changed = true
	}
	if changed {
		st.Disappeared, st.Claimed = st.Disappeared[:0], st.Claimed[:0]
		for _, n := range st.KnownDevices {
			switch {
			case gone.reported[n]:
				st.Disappeared = append(st.Disappeared, n)
			case gone.claimed[n]:
				st.Claimed = append(st.Claimed, n)
			}
		}
	}
	return out, changed
}

// steady reports the common poll: the same devices as known, none
// missing. Equal sizes plus "every known one is present" means the sets
// are equal.
func (c *PortStateCheck) steady(st *PortMemory, present map[string]Presence) bool {
	if len(st.Disappeared) != 0 || len(st.Claimed) != 0 || len(present) != len(st.KnownDevices) || len(c.misses) != 0 {
		return false
	}
	for _, n := range st.KnownDevices {
		if _, ok := present[n]; !ok {
			return false
		}
	}
	return true
}

// presenceOf judges one known device: back after being reported gone
// (reappeared), or missing for the DisappearAfter-th complete enumeration
// in a row (disappeared). A loss that another check claims (Claimed) is
// that check's one condition: the device counts as gone here, silently,
// for as long as the claim holds; if it ends while the device is still
// missing, the disappearance is reported here after all, since nothing
// else says it. gone is updated; ok says a spec was made, changed that
// the memory moved without one.
func (c *PortStateCheck) presenceOf(st *PortMemory, name string, present map[string]Presence, gone goneSets, classDir string) (spec event.Spec, ok, changed bool) {
	if _, here := present[name]; here {
		missed := c.misses[name]
		delete(c.misses, name)
		switch {
		case gone.claimed[name]:
			// The claiming check clears its own condition.
			delete(gone.claimed, name)
			return event.Spec{}, false, true
		case !gone.reported[name]:
			if missed > 0 {
				c.back = append(c.back, Back{Device: name, Missed: missed})
			}
			return event.Spec{}, false, false
		}
		delete(gone.reported, name)
		return event.Spec{
			Kind: event.KindDeviceReappeared, CheckName: event.StateCheckFor(c.linkLayerOf(st, name, present)),
			IsHealthy: true, Device: name, ErrorCode: []string{DisappearedErrorCode},
			Message:   fmt.Sprintf("NIC %s reappeared in %s/", name, classDir),
			Condition: condition.OfNIC(name),
		}, true, false
	}
	if gone.reported[name] {
		return event.Spec{}, false, false
	}
	claimed := c.Claimed != nil && c.Claimed(name, st.DeviceAddrs[name])
	if gone.claimed[name] {
		if claimed {
			return event.Spec{}, false, false
		}
		delete(gone.claimed, name)
		gone.reported[name] = true
		return c.disappeared(st, name, present, classDir), true, false
	}
	c.misses[name]++
	if c.misses[name] < DisappearAfter {
		return event.Spec{}, false, false
	}
	if claimed {
		gone.claimed[name] = true
		return event.Spec{}, false, true
	}
	gone.reported[name] = true
	return c.disappeared(st, name, present, classDir), true, false
}

// disappeared is the event of a NIC gone from class/infiniband (seed 7.3).
func (c *PortStateCheck) disappeared(st *PortMemory, name string, present map[string]Presence, classDir string) event.Spec {
	return event.Spec{
		Kind: event.KindDeviceDisappeared, CheckName: event.StateCheckFor(c.linkLayerOf(st, name, present)),
		IsFatal: true, Device: name, ErrorCode: []string{DisappearedErrorCode},
		Message:   fmt.Sprintf("NIC %s disappeared from %s/ - hardware failure", name, classDir),
		Condition: condition.OfNIC(name),
	}
}

// learn records devices seen for the first time and each device's PCI
// address (how a rename is recognised).
func (c *PortStateCheck) learn(st *PortMemory, present map[string]Presence) bool {
	changed := false
	known := map[string]bool{}
	for _, n := range st.KnownDevices {
		known[n] = true
	}
	for name, pr := range present {
		if !known[name] {
			st.KnownDevices = append(st.KnownDevices, name)
			changed = true
		}
		if pr.PCIAddress != "" && st.DeviceAddrs[name] != pr.PCIAddress {
			if st.DeviceAddrs == nil {
				st.DeviceAddrs = map[string]string{}
			}
			st.DeviceAddrs[name] = pr.PCIAddress
			changed = true
		}
	}
	return changed
}

func (c *PortStateCheck) linkLayerOf(st *PortMemory, name string, present map[string]Presence) string {
	if ll := present[name].LinkLayer; ll != "" {
		return ll
	}
	for _, ps := range st.PortStates {
		if ps.Device == name && ps.LinkLayer != "" {
			return ps.LinkLayer
		}
	}
	return topology.LinkLayerInfiniBand
}

// renames recognises a known device that is missing while a new name sits
// at its PCI address: the same NIC under another name. Its state (ports,
// counters, latches) moves to the new name and a healthy event on the old
// name says what happened, instead of a fatal "disappeared".
func (c *PortStateCheck) renames(st *PortMemory, present map[string]Presence, out []event.Spec) ([]event.Spec, bool) {
	if len(st.DeviceAddrs) == 0 {
		return out, false
	}
	known := map[string]bool{}
	for _, n := range st.KnownDevices {
		known[n] = true
	}
	byAddr := map[string]string{}
	for name, pr := range present {
		if !known[name] && pr.PCIAddress != "" {
			byAddr[pr.PCIAddress] = name
		}
	}
	changed := false
	for i, old := range st.KnownDevices {
		if _, here := present[old]; here {
			continue
		}
		addr := st.DeviceAddrs[old]
		nw, ok := byAddr[addr]
		if addr == "" || !ok {
			continue
		}
		delete(byAddr, addr)
		c.migrateDevice(st, old, nw)
		st.KnownDevices[i] = nw
		delete(c.misses, old)
		changed = true
		out = append(out, event.Spec{
			Kind: event.KindDeviceReappeared, CheckName: event.StateCheckFor(present[nw].LinkLayer), IsHealthy: true, Device: old,
			ErrorCode: []string{DisappearedErrorCode},
			Message:   fmt.Sprintf("NIC %s was renamed to %s (same PCI address %s); it is monitored under its new name", old, nw, addr),
			Metadata:  map[string]string{"newName": nw, "pciAddress": addr},
			Condition: condition.OfNIC(old),
		})
	}
	return out, changed
}

// migrateDevice moves the device's memory to its new name here and, through
// OnRename, in every other check that remembers it.
func (c *PortStateCheck) migrateDevice(st *PortMemory, old, nw string) {
	st.Rename(old, nw)
	if c.OnRename != nil {
		c.OnRename(old, nw)
	}
}
