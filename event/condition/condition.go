// Package condition is the identity of a condition: the check that raises
// it and the entity it is about (DESIGN.md section 9). A check sets it on
// every event it emits (event.Spec.Condition); the health model keys its
// conditions by it and the outbox folds superseded events by it, so the
// two can never disagree about which events speak of the same thing.
package condition

import "fmt"

// Kind is what a condition is about.
type Kind string

const (
	Node    Kind = "node"
	Card    Kind = "card"
	NIC     Kind = "nic"
	Port    Kind = "port"
	Counter Kind = "counter" // Name: the counter, or its own error code
	File    Kind = "file"    // Name: the sysfs file whose read hung or is parked
	Finding Kind = "finding" // Name: the link sanity finding kind
	// PCI is a PCI function on NICs' paths, the NIC's own function or a
	// bridge/switch port above it (PCI: its address, Name: the AER class
	// or the path finding's kind). Its condition covers exactly the ports
	// its event listed: every NIC below the function.
	PCI Kind = "pci"
	// Check is one of the daemon's own checks (Name), disabled by a
	// panic: the node is not healthy, but no port is at fault.
	Check Kind = "check"
	// KernelLog is a kernel-log pattern's condition (Name: the pattern)
	// on one PCI function (PCI), covering exactly the ports its event
	// listed; with no port it is a node-level condition (a function
	// without an RDMA device, or PCI empty: a record naming no function).
	KernelLog Kind = "kernel-log"
)

// Entity names the thing a condition is about. Device and Port are set
// for every kind below a NIC; Card for a card; PCI for a PCI function.
// The JSON names are those of the state file's health section.
type Entity struct {
	Kind   Kind   `json:"kind"`
	Device string `json:"device,omitempty"`
	Port   int    `json:"port,omitempty"`
	Card   string `json:"card,omitempty"`
	Name   string `json:"name,omitempty"`
	// PCI is the address of a PCI entity: one condition per function and
	// name, whatever NIC below it was named first.
	PCI string `json:"pci,omitempty"`
}

// OfNode is a node-level condition; name tells two of one check apart.
func OfNode(name string) Entity { return Entity{Kind: Node, Name: name} }

// OfCard is a card (domain:bus:device).
func OfCard(card string) Entity { return Entity{Kind: Card, Card: card} }

// OfCardFinding is one finding about a card (name: what drifted).
func OfCardFinding(card, name string) Entity { return Entity{Kind: Card, Card: card, Name: name} }

// Names of the inventory's conditions: the one condition of a NIC's PCI
// function, whatever is wrong with it, and the node's expected compute
// ports.
const (
	InventoryName     = "inventory"
	ExpectedPortsName = "expected-ports"
)

// OfNIC is an RDMA device.
func OfNIC(device string) Entity { return Entity{Kind: NIC, Device: device} }

// OfPort is one port of a NIC.
func OfPort(device string, port int) Entity { return Entity{Kind: Port, Device: device, Port: port} }

// OfCounter is one counter of a port, or one condition of its own about
// that counter (its saturation, the port's congestion), named by its own
// error code so it never replaces or clears the counter's latched breach.
func OfCounter(device string, port int, name string) Entity {
	return Entity{Kind: Counter, Device: device, Port: port, Name: name}
}

// OfFile is a sysfs file (or driver call) of a port whose read hung or
// is parked.
func OfFile(device string, port int, path string) Entity {
	return Entity{Kind: File, Device: device, Port: port, Name: path}
}

// OfFinding is one link sanity finding of a port (port 0: the device).
func OfFinding(device string, port int, kind string) Entity {
	return Entity{Kind: Finding, Device: device, Port: port, Name: kind}
}

// OfPCI is one condition of a PCI function: an AER class, or a path
// finding's kind.
func OfPCI(address, name string) Entity { return Entity{Kind: PCI, PCI: address, Name: name} }

// OfKernelLog is a kernel-log pattern's condition on the PCI function pci
// ("" for a record naming no function): one per pattern and function,
// whatever ports the function had when it was raised.
func OfKernelLog(pci, pattern string) Entity { return Entity{Kind: KernelLog, PCI: pci, Name: pattern} }

// OfCheck is one of the daemon's own checks (or a sink), disabled by a
// panic.
func OfCheck(name string) Entity { return Entity{Kind: Check, Name: name} }

func (e Entity) String() string {
	switch e.Kind {
	case Node:
		if e.Name != "" {
			return "node " + e.Name
		}
		return "node"
	case Card:
		if e.Name != "" {
			return "card " + e.Card + " " + e.Name
		}
		return "card " + e.Card
	case PCI:
		return fmt.Sprintf("PCI %s %s", e.PCI, e.Name)
	case Check:
		return "check " + e.Name
	case KernelLog:
		if e.PCI == "" {
			return "node kernel log " + e.Name
		}
		return fmt.Sprintf("PCI %s kernel log %s", e.PCI, e.Name)
	case NIC:
		return e.Device
	case Port:
		return fmt.Sprintf("%s/%d", e.Device, e.Port)
	}
	if e.Port > 0 {
		return fmt.Sprintf("%s/%d %s", e.Device, e.Port, e.Name)
	}
	return fmt.Sprintf("%s %s", e.Device, e.Name)
}

// Key identifies a condition: one per (check, entity).
type Key struct {
	Check  string `json:"check"`
	Entity Entity `json:"entity"`
}

// Known reports whether the key names an entity (the zero Key does not).
func (k Key) Known() bool { return k.Entity.Kind != "" }
