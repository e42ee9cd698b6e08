package health

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
)

// Severity orders verdicts: the worst one wins.
type Severity int

const (
	Healthy Severity = iota
	NonFatal
	Fatal
)

func (s Severity) String() string {
	switch s {
	case NonFatal:
		return "degraded"
	case Fatal:
		return "fatal"
	}
	return "healthy"
}

// EntityKind is what a condition is about.
type EntityKind string

const (
	EntityNode    EntityKind = "node"
	EntityCard    EntityKind = "card"
	EntityNIC     EntityKind = "nic"
	EntityPort    EntityKind = "port"
	EntityCounter EntityKind = "counter" // Name: the counter
	EntityFile    EntityKind = "file"    // Name: the sysfs file whose read hung
	EntityFinding EntityKind = "finding" // Name: the link sanity finding kind
	// EntityPCI is a PCI function on NICs' paths, the NIC's own function
	// or a bridge/switch port above it (PCI: its address, Name: the AER
	// class or the path finding's kind). Its condition covers exactly the
	// ports its event listed: every NIC below the function.
	EntityPCI EntityKind = "pci"
	// EntityCheck is one of the daemon's own checks (Name), disabled by a
	// panic: the node is not healthy, but no port is at fault.
	EntityCheck EntityKind = "check"
	// EntityKernelLog is a kernel-log pattern's condition (Name: the
	// pattern) on one PCI function (PCI), covering exactly the ports its
	// event listed; with no port it is a node-level condition (a function
	// without an RDMA device, or PCI empty: a record naming no function).
	EntityKernelLog EntityKind = "kernel-log"
)

// Entity names the thing a condition is about. Device and Port are set for
// every kind below a NIC; Card for a card.
type Entity struct {
	Kind   EntityKind `json:"kind"`
	Device string     `json:"device,omitempty"`
	Port   int        `json:"port,omitempty"`
	Card   string     `json:"card,omitempty"`
	Name   string     `json:"name,omitempty"`
	// PCI is the address of an EntityPCI: one condition per function and
	// name, whatever NIC below it was named first.
	PCI string `json:"pci,omitempty"`
}

func (e Entity) String() string {
	switch e.Kind {
	case EntityNode:
		if e.Name != "" {
			return "node " + e.Name
		}
		return "node"
	case EntityCard:
		if e.Name != "" {
			return "card " + e.Card + " " + e.Name
		}
		return "card " + e.Card
	case EntityPCI:
		return fmt.Sprintf("PCI %s %s", e.PCI, e.Name)
	case EntityCheck:
		return "check " + e.Name
	case EntityKernelLog:
		if e.PCI == "" {
			return "node kernel log " + e.Name
		}
		return fmt.Sprintf("PCI %s kernel log %s", e.PCI, e.Name)
	case EntityNIC:
		return e.Device
	case EntityPort:
		return fmt.Sprintf("%s/%d", e.Device, e.Port)
	}
	if e.Port > 0 {
		return fmt.Sprintf("%s/%d %s", e.Device, e.Port, e.Name)
	}
	return fmt.Sprintf("%s %s", e.Device, e.Name)
}

// Key identifies a condition: one per (check, entity).
type Key struct {
	Check  string
	Entity Entity
}

// PortRef names a port a card-level condition is about.
type PortRef struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
}

// Condition is one active finding.
type Condition struct {
	Check    string                  `json:"check"`
	Entity   Entity                  `json:"entity"`
	Severity Severity                `json:"severity"`
	Kind     event.Kind              `json:"kind"`
	Message  string                  `json:"message"`
	Action   event.RecommendedAction `json:"action"`
	Since    time.Time               `json:"since"`
	EventID  string                  `json:"eventId,omitempty"`
	// Ports are the ports a card condition names (below the peer mode), or
	// those below a PCIe path hop.
	Ports []PortRef `json:"ports,omitempty"`
}

// Key returns the condition's key.
func (c *Condition) Key() Key { return Key{c.Check, c.Entity} }

// IsSanityFinding reports whether the condition is a link sanity finding:
// one about a port, or one about a PCIe hop above it (an EntityPCI raised
// by the sanity pass). Views list these as the port's sanity findings.
func (c *Condition) IsSanityFinding() bool {
	return c.Entity.Kind == EntityFinding || c.Entity.Kind == EntityPCI && c.Kind == event.KindLinkSanity
}

// Covers reports whether the condition bears on a port's verdict: it is
// about the port itself (or one of its counters, files or findings), its
// NIC, or its card.
func (c *Condition) Covers(device string, port int, card string) bool {
	switch c.Entity.Kind {
	case EntityCheck:
		return false
	case EntityNode:
		// A node-level condition (no subnet manager) bears on the ports
		// it names.
		return slices.Contains(c.Ports, PortRef{Device: device, Port: port})
	case EntityCard:
		return card != "" && c.Entity.Card == card
	case EntityPCI, EntityKernelLog:
		return slices.Contains(c.Ports, PortRef{Device: device, Port: port})
	case EntityNIC:
		return c.Entity.Device == device
	}
	return c.Entity.Device == device && (c.Entity.Port == port || c.Entity.Port == 0)
}

func compareConditions(a, b *Condition) int {
	if c := cmp.Compare(b.Severity, a.Severity); c != 0 {
		return c
	}
	if c := CompareDevices(a.Entity.Device, b.Entity.Device); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Entity.Port, b.Entity.Port); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Entity.Card, b.Entity.Card); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Entity.Kind, b.Entity.Kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Entity.Name, b.Entity.Name); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Entity.PCI, b.Entity.PCI); c != 0 {
		return c
	}
	return cmp.Compare(a.Check, b.Check)
}

// CompareDevices orders device names as every view lists them: runs of
// digits compare by value, so mlx5_2 comes before mlx5_10; of equal
// values the shorter run (mlx5_2 before mlx5_02) comes first.
func CompareDevices(a, b string) int {
	for a != "" && b != "" {
		na, ra := leadingDigits(a)
		nb, rb := leadingDigits(b)
		if na != "" && nb != "" {
			x, y := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if c := cmp.Compare(len(x), len(y)); c != 0 {
				return c
			}
			if c := cmp.Compare(x, y); c != 0 {
				return c
			}
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func leadingDigits(s string) (string, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}
