package health

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
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

// PortRef names a port a card-level condition is about.
type PortRef = event.PortRef

// Condition is one active finding.
type Condition struct {
	Check    string                  `json:"check"`
	Entity   condition.Entity        `json:"entity"`
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
func (c *Condition) Key() condition.Key { return condition.Key{Check: c.Check, Entity: c.Entity} }

// IsSanityFinding reports whether the condition is a link sanity finding:
// one about a port, or one about a PCIe hop above it (an condition.PCI raised
// by the sanity pass). Views list these as the port's sanity findings.
func (c *Condition) IsSanityFinding() bool {
	return c.Entity.Kind == condition.Finding || c.Entity.Kind == condition.PCI && c.Kind == event.KindLinkSanity
}

// Covers reports whether the condition bears on a port's verdict: it is
// about the port itself (or one of its counters, files or findings), its
// NIC, or its card.
func (c *Condition) Covers(device string, port int, card string) bool {
	switch c.Entity.Kind {
	case condition.Check:
		return false
	case condition.Node:
		// A node-level condition (no subnet manager) bears on the ports
		// it names.
		return slices.Contains(c.Ports, PortRef{Device: device, Port: port})
	case condition.Card:
		return card != "" && c.Entity.Card == card
	case condition.PCI, condition.KernelLog:
		return slices.Contains(c.Ports, PortRef{Device: device, Port: port})
	case condition.NIC:
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
