package inventory

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	pci "github.com/nichealth/nichealthd/topology/inventory"
)

// Faults of a function, as its events' metadata "fault" names them.
const (
	FaultUnbound     = string(pci.Unbound)
	FaultOtherDriver = string(pci.OtherDriver)
	FaultNoRDMA      = string(pci.NoRDMA)
	FaultAbsent      = "absent"
)

// ErrorCode is the error code of every function condition (raise and clear
// alike: one condition per function, whatever its fault).
const ErrorCode = "NIC_INVENTORY"

// Scan is one look at the bus: the functions the PCI inventory listed,
// attached to discovery and classified (topology/inventory Attach and
// Classify).
type Scan struct {
	Functions []pci.Function
	// Complete: bus/pci/devices was listed. When it was not, nothing is
	// judged absent (an incomplete listing is not evidence).
	Complete bool
	// Enumerated: the poll listed class/infiniband completely, one of the
	// checks.LostAfter enumerations a run-time loss waits for.
	Enumerated bool
	Boot       string
	Now        time.Time
	// LostHold is how long a function monitored this boot must have been
	// seen without its driver or RDMA device, measured from the first
	// poll that saw it so, besides its checks.LostAfter enumerations
	// (DESIGN.md difference 18): enumerations alone are polls, and at a
	// 250 ms poll three of them are shorter than a mlx5_ib reload.
	LostHold time.Duration
	// Known says what the port checks remember of the NIC that had a PCI
	// address this boot (nil: nothing).
	Known func(addr string) KnownNIC
}

// KnownNIC is what the port checks remember of a NIC monitored this boot:
// its name, its last known ports, and whether they already reported it
// disappeared.
type KnownNIC struct {
	Device   string
	Ports    []event.PortRef
	Reported bool
}

func (s Scan) known(addr string) KnownNIC {
	if s.Known == nil {
		return KnownNIC{}
	}
	return s.Known(addr)
}

// JudgeFunctions judges every function of the scan, and every function
// expected from an earlier boot that the scan did not list:
//   - a compute or storage function present without a usable RDMA device
//     (unbound, another driver, bound without infiniband/) is fatal on
//     that function (seed 7.3's device disappearance, for the devices
//     that never appeared): KindFunctionFailed. One that was not
//     monitored this boot (gone across a reboot, a failed probe) is known
//     at once; one that lost its driver or RDMA device at run time is
//     raised only after checks.LostAfter complete enumerations without it
//     and Scan.LostHold since it was first seen so (DESIGN.md difference
//     18: a driver or devlink reload comes back within them and says
//     nothing, at any poll interval), and then it is the loss's one
//     condition: it names the NIC's last known ports, and the port check,
//     asking Check.Reports, does not report the NIC disappeared as well.
//     If the port check already did (the scan came too late), that stays
//     the one condition;
//   - a function expected (a compute or storage NIC of an earlier boot)
//     and absent from the bus is fatal, unless its RDMA device was
//     monitored this boot (the port check's disappearance owns that) or
//     its serial number or node GUID shows up at another address (moved:
//     the expectation follows it): KindFunctionAbsent. A function whose
//     failure was raised here and which then leaves the bus is re-graded:
//     the same condition;
//   - a raised condition clears when the function is healthy again,
//     returns, is left alone (excluded, management) or is no longer
//     expected: KindFunctionOK.
//
// Functions the daemon leaves alone (VFs, limited PFs, management NICs,
// excluded ones) and functions whose role is unknown are never judged.
// exp learns every function judged as a compute or storage NIC; changed
// and expChanged say whether mem and exp moved.
func JudgeFunctions(mem *Memory, exp *Expected, s Scan) (specs []event.Spec, changed, expChanged bool) {
	if mem.pending == nil {
		mem.pending = map[string]pendingLoss{}
	}
	present := make(map[string]*pci.Function, len(s.Functions))
	for i := range s.Functions {
		f := &s.Functions[i]
		present[f.Address] = f
		if f.IsVF {
			continue
		}
		prev, had := mem.Seen[f.Address]
		if !had || f.Monitored && !prev {
			changed = true
		}
		mem.Seen[f.Address] = prev || f.Monitored
		sp, ch, ech := judgePresent(mem, exp, f, s)
		specs, changed, expChanged = append(specs, sp...), changed || ch, expChanged || ech
	}
	if s.Complete {
		sp, ch, ech := judgeAbsent(mem, exp, present, s)
		specs, changed, expChanged = append(specs, sp...), changed || ch, expChanged || ech
	}
	return specs, changed, expChanged
}

// judgePresent judges a function on the bus.
func judgePresent(mem *Memory, exp *Expected, f *pci.Function, s Scan) ([]event.Spec, bool, bool) {
	e, known := exp.Lookup(f.Address)
	role, reason, gpus := string(f.Role), f.RoleReason, gpumeta.Describe(f.GPUs)
	if f.Device == "" && known {
		// Without an RDMA device its role is an estimate from the PCIe
		// tree; what it was when it had one is better.
		role, reason, gpus = e.Role, e.Reason, e.GPUs
	}
	judged := f.LeftAlone == "" && (role == string(topology.RoleCompute) || role == string(topology.RoleStorage))
	expChanged := judged && learn(exp, f, e, known, role, reason, gpus, s.Boot)
	r, raised := mem.Functions[f.Address]
	state := f.State()
	switch {
	case !judged || state == pci.Healthy:
		// Back within the enumerations (a driver reload): nothing to say.
		delete(mem.pending, f.Address)
		if !raised {
			return nil, false, expChanged
		}
		why := clearReason(f, judged, role)
		return []event.Spec{clearSpec(mem, f.Address, r, why)}, true, expChanged
	case raised && r.Fault == string(state):
		return nil, false, expChanged
	}
	var nic KnownNIC
	if !raised && mem.Seen[f.Address] {
		// Lost at run time: difference 3's enumerations first.
		nic = s.known(f.Address)
		if nic.Reported {
			// The port check already reported the NIC disappeared (this
			// scan came after its enumerations): that is the one condition.
			delete(mem.pending, f.Address)
			return nil, false, expChanged
		}
		pl, ok := mem.pending[f.Address]
		if !ok {
			pl.Since = s.Now
		}
		if s.Enumerated {
			pl.Enumerations++
		}
		mem.pending[f.Address] = pl
		if pl.Enumerations < checks.LostAfter || s.Now.Sub(pl.Since) < s.LostHold {
			return nil, false, expChanged
		}
	}
	delete(mem.pending, f.Address)
	check := event.StateCheckFor(f.LinkLayer())
	since, ports := s.Now, nic.Ports
	if raised {
		// A re-grade stays under the check that raised it, since then,
		// naming the same ports.
		check, since, ports = r.Check, r.Since, r.Ports
	}
	mem.Functions[f.Address] = Raised{Check: check, Fault: string(state), Since: since, Ports: ports}
	label := describe(f.Address, role, reason, orDefault(e.Device, nic.Device), f.Serial)
	return []event.Spec{{
		Kind: event.KindFunctionFailed, CheckName: check, IsFatal: true,
		Message:   label + " " + failedText(f, state) + lostText(ports, nic.Device) + gpusText(gpus),
		ErrorCode: []string{ErrorCode},
		Ports:     ports,
		Entities:  []event.Entity{{Type: event.EntityPCI, Value: f.Address}},
		Metadata:  metadata(f.Address, string(state), role, gpus, orDefault(f.Device, orDefault(e.Device, nic.Device)), f.Serial),
		Condition: condition.OfPCI(f.Address, condition.InventoryName),
	}}, true, expChanged
}

// lostText says that the NIC the function had this boot is gone with it,
// so the event is the loss's one condition ("" when it had none).
func lostText(ports []event.PortRef, device string) string {
	if len(ports) == 0 || device == "" {
		return ""
	}
	return fmt.Sprintf(". Its RDMA device %s (monitored until now) left class/infiniband with it: one condition for both", device)
}

// learn records f as expected from now on; it reports whether that
// changed the expected inventory.
func learn(exp *Expected, f *pci.Function, e ExpectedFunction, known bool, role, reason, gpus, boot string) bool {
	nw := ExpectedFunction{Device: f.Device, Role: role, Reason: reason, GPUs: gpus, LinkLayer: f.LinkLayer(),
		Serial: f.Serial, NodeGUID: f.NodeGUID, BoardID: f.BoardID, Boot: boot}
	if f.Device == "" || nw.BoardID == "" {
		// Keep what only the RDMA device could say.
		nw.BoardID = e.BoardID
	}
	if f.Device == "" {
		nw.Device, nw.NodeGUID = e.Device, e.NodeGUID
		if nw.Serial == "" {
			nw.Serial = e.Serial
		}
	}
	switch {
	case known && e.BoardID != "" && nw.BoardID != e.BoardID:
		// Another model in the slot than the last one seen: a swapped
		// card, a finding for the rest of this boot.
		nw.SwappedFrom, nw.SwappedBoot = e.BoardID, boot
	case e.SwappedBoot == boot:
		nw.SwappedFrom, nw.SwappedBoot = e.SwappedFrom, e.SwappedBoot
	}
	if known && nw == e {
		return false
	}
	exp.Functions[f.Address] = nw
	return true
}

// clearReason says why a raised function condition no longer holds.
func clearReason(f *pci.Function, judged bool, role string) string {
	switch {
	case f.LeftAlone != "":
		return "it is no longer judged: " + f.LeftAlone
	case !judged:
		return fmt.Sprintf("it is no longer judged as a compute or storage NIC (role %s)", orUnknown(role))
	case f.Device != "":
		return fmt.Sprintf("it is bound to %s with RDMA device %s again", pci.CoreDriver, f.Device)
	}
	return "it is bound to " + pci.CoreDriver + " with its RDMA device again"
}

// failedText says what is wrong with a present function and the fix.
func failedText(f *pci.Function, state pci.State) string {
	// No shell pipe in a fix: the Nagios line reserves "|" for its
	// performance data, and the kernel log is read by journalctl alone.
	dmesg := fmt.Sprintf("journalctl -k --grep %s", f.Address)
	switch state {
	case pci.Unbound:
		return fmt.Sprintf("is on the PCI bus with no driver bound, so it has no RDMA device and no port: "+
			"mlx5_core failed to probe it at boot or it was unbound. Read `%s` for the probe error; "+
			"reload the driver (modprobe -r mlx5_ib mlx5_core && modprobe mlx5_core) or bind it "+
			"(echo %s > /sys/bus/pci/drivers/mlx5_core/bind); a firmware fault needs a firmware reset (mlxfwreset) or reflash", dmesg, f.Address)
	case pci.OtherDriver:
		return fmt.Sprintf("is bound to %s, not %s, so it has no RDMA device and no port. "+
			"If it was handed over on purpose (a VM passthrough), exclude its address in nicExclusionRegex; "+
			"otherwise unbind it from %s and bind %s, and read `%s`", f.Driver, pci.CoreDriver, f.Driver, pci.CoreDriver, dmesg)
	}
	return fmt.Sprintf("is bound to %s but has no RDMA device (no infiniband/ under it), so none of its ports "+
		"can carry RDMA: mlx5_ib is not loaded or failed on it. Load it (modprobe mlx5_ib), read `%s`, "+
		"and update the firmware if the error points there", pci.CoreDriver, dmesg)
}

// judgeAbsent judges the functions expected and not on the bus.
func judgeAbsent(mem *Memory, exp *Expected, present map[string]*pci.Function, s Scan) ([]event.Spec, bool, bool) {
	var specs []event.Spec
	changed, expChanged := false, false
	for addr, e := range exp.Functions {
		if present[addr] != nil {
			continue
		}
		if to := movedTo(e, present, exp); to != "" {
			// The same card at another address (moved to another slot):
			// expected there now, nothing missing here.
			delete(exp.Functions, addr)
			expChanged = true
			if r, ok := mem.Functions[addr]; ok {
				specs = append(specs, clearSpec(mem, addr, r, "the same card (serial "+orDefault(e.Serial, e.NodeGUID)+") is at "+to+" now"))
				changed = true
			}
			continue
		}
		r, raised := mem.Functions[addr]
		monitored, seen := mem.Seen[addr]
		if seen && monitored && !raised {
			// The port check reports its RDMA device disappeared; a
			// failure still waiting for its enumerations is no longer
			// this check's to report.
			delete(mem.pending, addr)
			continue
		}
		if raised && r.Fault == FaultAbsent {
			continue
		}
		check := event.StateCheckFor(e.LinkLayer)
		since := s.Now
		var ports []event.PortRef
		if raised {
			check, since, ports = r.Check, r.Since, r.Ports
		}
		mem.Functions[addr] = Raised{Check: check, Fault: FaultAbsent, Since: since, Ports: ports}
		changed = true
		when := "present last boot"
		if seen || e.Boot == s.Boot {
			when = "present earlier this boot"
		}
		specs = append(specs, event.Spec{
			Kind: event.KindFunctionAbsent, CheckName: check, IsFatal: true,
			Message: fmt.Sprintf("%s %s, absent now: the card is gone from the PCI bus (no %s in /sys/bus/pci/devices). "+
				"Reseat or replace it (slot, riser, power; `journalctl -k --grep %s`, `lspci -s %s`). If it was removed on purpose, "+
				"`nichealthctl ack %s` forgets it", describe(addr, e.Role, e.Reason, e.Device, e.Serial), when, addr, addr, addr, addr) + gpusText(e.GPUs),
			ErrorCode: []string{ErrorCode},
			Ports:     ports,
			Entities:  []event.Entity{{Type: event.EntityPCI, Value: addr}},
			Metadata:  metadata(addr, FaultAbsent, e.Role, e.GPUs, e.Device, e.Serial),
			Condition: condition.OfPCI(addr, condition.InventoryName),
		})
	}
	for addr := range mem.pending {
		if present[addr] == nil {
			delete(mem.pending, addr) // gone from the bus: handled above
		}
	}
	// A raised condition of a function that is neither on the bus nor
	// expected (acknowledged, or never a NIC after all) has nothing left
	// to hold it.
	for addr, r := range mem.Functions {
		if _, ok := exp.Functions[addr]; !ok && present[addr] == nil {
			specs = append(specs, clearSpec(mem, addr, r, "it is no longer expected on this node"))
			changed = true
		}
	}
	return specs, changed, expChanged
}

// movedTo is the present address that holds e's card (same serial number
// or node GUID) and is not itself expected as another card, or "".
func movedTo(e ExpectedFunction, present map[string]*pci.Function, exp *Expected) string {
	for addr, f := range present {
		same := e.Serial != "" && f.Serial == e.Serial || e.NodeGUID != "" && f.NodeGUID == e.NodeGUID
		if !same || f.IsVF {
			continue
		}
		if other, ok := exp.Functions[addr]; ok && other.Serial != e.Serial {
			continue
		}
		return addr
	}
	return ""
}

// ErrNotRaised is returned by Acknowledge for a function with no
// condition to acknowledge.
var ErrNotRaised = errors.New("no inventory condition")

// ErrStillPresent is returned by Acknowledge for a function that is on the
// bus: it is not removed, it is broken (or deliberately unbound, which the
// NIC filter expresses).
var ErrStillPresent = errors.New("the function is on the PCI bus")

// Acknowledge is the operator's word that the function at addr was
// removed on purpose: the expectation is forgotten (a deliberate hardware
// change is acknowledged once, not fought) and the condition cleared.
func Acknowledge(mem *Memory, exp *Expected, addr, who string) ([]event.Spec, error) {
	r, raised := mem.Functions[addr]
	if !raised {
		if _, ok := exp.Functions[addr]; !ok {
			return nil, fmt.Errorf("acknowledge %s: %w (it is not an expected NIC function of this node)", addr, ErrNotRaised)
		}
		return nil, fmt.Errorf("acknowledge %s: %w: it is expected and was not reported missing", addr, ErrNotRaised)
	}
	if r.Fault != FaultAbsent {
		return nil, fmt.Errorf("acknowledge %s: %w (%s): bind it to %s, or exclude its address in nicExclusionRegex if it is unbound on purpose",
			addr, ErrStillPresent, r.Fault, pci.CoreDriver)
	}
	delete(exp.Functions, addr)
	return []event.Spec{clearSpec(mem, addr, r, "its removal was acknowledged by "+who+"; it is no longer expected")}, nil
}

// ClearAll clears every function condition (the inventory check was
// switched off).
func ClearAll(mem *Memory, why string) []event.Spec {
	clear(mem.pending)
	var out []event.Spec
	for addr, r := range mem.Functions {
		out = append(out, clearSpec(mem, addr, r, why))
	}
	return out
}

// clearSpec ends the condition of function addr and forgets it.
func clearSpec(mem *Memory, addr string, r Raised, why string) event.Spec {
	delete(mem.Functions, addr)
	return event.Spec{
		Kind: event.KindFunctionOK, CheckName: r.Check, IsHealthy: true,
		Message:   fmt.Sprintf("NIC function %s: condition cleared (%s): %s", addr, r.Fault, why),
		ErrorCode: []string{ErrorCode},
		Ports:     r.Ports,
		Entities:  []event.Entity{{Type: event.EntityPCI, Value: addr}},
		Metadata:  map[string]string{"pci": addr, "fault": r.Fault},
		Condition: condition.OfPCI(addr, condition.InventoryName),
	}
}

// describe names a function in a message: address, role and why, the
// device name it had and its serial number where known, e.g.
// "NIC function 0000:3b:00.0 (Compute, PIX to GPU3; was mlx5_3, serial MT2245X00004)".
func describe(addr, role, reason, device, serial string) string {
	var parts []string
	head := orUnknown(role)
	if why := strings.TrimPrefix(strings.TrimPrefix(reason, role), ": "); why != "" && why != reason {
		head += ", " + why
	}
	parts = append(parts, head)
	if device != "" {
		parts = append(parts, "was "+device)
	}
	if serial != "" {
		parts = append(parts, "serial "+serial)
	}
	return fmt.Sprintf("NIC function %s (%s)", addr, strings.Join(parts, "; "))
}

func gpusText(gpus string) string {
	if gpus == "" {
		return ""
	}
	return ". GPUs behind it: " + gpus
}

func metadata(addr, fault, role, gpus, device, serial string) map[string]string {
	md := map[string]string{"pci": addr, "fault": fault, "role": role, "gpus": orDefault(gpus, "no GPU affinity")}
	if device != "" {
		md["lastDevice"] = device
	}
	if serial != "" {
		md["serial"] = serial
	}
	return md
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func orUnknown(s string) string { return orDefault(s, "unknown role") }

// Reports says whether the loss of the NIC function at addr is this
// check's to report: a failure raised, or one waiting for its
// enumerations. The port check asks before it reports the NIC's RDMA
// device disappeared, so that one loss is one condition (DESIGN.md
// difference 18).
func (m *Memory) Reports(addr string) bool {
	if _, ok := m.Functions[addr]; ok {
		return true
	}
	_, ok := m.pending[addr]
	return ok
}
