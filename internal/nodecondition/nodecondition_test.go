package nodecondition

import (
	"slices"
	"testing"
	"time"
)

var (
	t0    = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	nic0  = Entity{"NIC", "mlx5_0"}
	port1 = Entity{"NICPort", "1"}
	nic10 = Entity{"NIC", "mlx5_10"}
)

func fatal(check, msg string, codes []string, ents ...Entity) Event {
	return Event{CheckName: check, IsFatal: true, Message: msg, RecommendedAction: "REPLACE_VM", ErrorCode: codes, Entities: ents, Timestamp: t0}
}

func healthy(check string, codes []string, ents ...Entity) Event {
	return Event{CheckName: check, IsHealthy: true, RecommendedAction: "NONE", ErrorCode: codes, Entities: ents, Timestamp: t0.Add(time.Second)}
}

// TestNodeCondition_MessageFormat pins constructHealthEventMessage.
func TestNodeCondition_MessageFormat(t *testing.T) {
	got := Message(fatal("C", "a; b", []string{"link_downed"}, nic0, port1))
	if want := "ErrorCode:link_downed NIC:mlx5_0 NICPort:1 a. b Recommended Action=REPLACE_VM"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestNodeCondition_ClearRule walks the cases of
// removeImpactedEntitiesMessagesScoped and aggregateEventMessages.
func TestNodeCondition_ClearRule(t *testing.T) {
	const c = "InfiniBandDegradationCheck"
	breach := fatal(c, "link_downed", []string{"link_downed"}, nic0, port1)
	other := fatal(c, "on mlx5_10", []string{"link_downed"}, nic10, port1)
	for _, tc := range []struct {
		name  string
		clear Event
		left  int
	}{
		{"entities without error code clear every message mentioning them", healthy(c, nil, nic0, port1), 1},
		{"an error code narrows the clear", healthy(c, []string{"symbol_error"}, nic0, port1), 2},
		{"the matching error code clears that message only", healthy(c, []string{"link_downed"}, nic0, port1), 1},
		{"every entity must be mentioned", healthy(c, nil, nic0, Entity{"NICPort", "2"}), 2},
		{"NIC:mlx5_1 is not NIC:mlx5_10", healthy(c, nil, Entity{"NIC", "mlx5_1"}), 2},
		{"no entities clears the check", healthy(c, []string{"link_downed"}), 0},
		{"another check's clear does nothing", healthy("InfiniBandStateCheck", nil), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := New()
			n.Apply(breach, other)
			n.Apply(tc.clear)
			if got := len(n.Messages(c)); got != tc.left {
				t.Fatalf("%d messages left, want %d: %q", got, tc.left, n.Messages(c))
			}
		})
	}
}

// TestNodeCondition_NonFatalMakesNoCondition: non-fatal unhealthy events
// and store-only events are not folded into node conditions; a fatal
// message is kept once.
func TestNodeCondition_NonFatalMakesNoCondition(t *testing.T) {
	n := New()
	nf := fatal("C", "degraded", nil, nic0, port1)
	nf.IsFatal = false
	so := fatal("C", "stored", nil, nic0, port1)
	so.StoreOnly = true
	f := fatal("C", "down", nil, nic0, port1)
	n.Apply(nf, so, f, f)
	if got := n.Messages("C"); len(got) != 1 || !slices.Equal(n.Checks(), []string{"C"}) {
		t.Fatalf("messages %q checks %q", got, n.Checks())
	}
}

// TestNodeCondition_BatchIsSortedByTimestamp: within one batch, a clear
// stamped before a raise is applied first.
func TestNodeCondition_BatchIsSortedByTimestamp(t *testing.T) {
	n := New()
	clear := healthy("C", nil, nic0, port1)
	clear.Timestamp = t0.Add(-time.Second)
	n.Apply(fatal("C", "down", nil, nic0, port1), clear)
	if len(n.Messages("C")) != 1 {
		t.Fatalf("clear stamped earlier removed the later raise: %q", n.Messages("C"))
	}
}
