package rules

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"
)

func ibPort(state string, linkDowned uint64) Port {
	return Port{Device: "mlx5_0", Port: 1, Link: linkOf(state), LinkDowned: Reading{Value: linkDowned, OK: true}}
}

func rocePort(state string, events uint64) Port {
	return Port{Device: "mlx5_9", Port: 1, Link: linkOf(state), LinkDownEvents: Reading{Value: events, OK: true}}
}

// Seed state 6.3 counts link_downed events per NICPort; the node widens
// the witness to a fall from ACTIVE to DOWN or a link_down_events_phy
// step (never carrier_changes: DESIGN.md difference 19), each episode
// counted once, also when the witnesses see it in different cycles.
func TestEpisodes_6_3_OneEpisodePerLinkLoss(t *testing.T) {
	type step struct {
		port Port
		want uint64
	}
	stateOnly := func(s string) Port { return Port{Device: "mlx5_1", Port: 2, Link: linkOf(s)} }
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"link_downed and the state cycle are one episode", []step{
			{ibPort("ACTIVE", 7), 0}, // baseline: earlier link-downs are not this boot's episodes
			{ibPort("DOWN", 8), 1},
			{ibPort("ACTIVE", 8), 1},
			{ibPort("ACTIVE", 9), 2}, // down and up again between two looks
			{ibPort("DOWN", 12), 5},  // three in one interval
			{ibPort("DOWN", 12), 5},  // staying down is not another episode
			{ibPort("ACTIVE", 2), 7}, // counter reset: the value is what happened since
		}},
		{"the state sees the fall a poll before link_downed steps", []step{
			{ibPort("ACTIVE", 7), 0},
			{ibPort("DOWN", 7), 1},
			{ibPort("DOWN", 8), 1},
			{ibPort("ACTIVE", 8), 1},
			{ibPort("DOWN", 8), 2},
			{ibPort("ACTIVE", 9), 2},
		}},
		{"state cycles when there is no counter", []step{
			{stateOnly("DOWN"), 0}, // down at the baseline: NICPortDrop's case, not a flap
			{stateOnly("ACTIVE"), 0},
			{stateOnly("DOWN"), 1},
			{stateOnly("INIT"), 1},
			{stateOnly("DOWN"), 1}, // training fails before the link is up: no new episode
			{stateOnly("ACTIVE"), 1},
			{stateOnly("INIT"), 1}, // logical re-init with the link up is no link loss
			{stateOnly("ACTIVE"), 1},
			{stateOnly(""), 1}, // unreadable: no change known
			{stateOnly("DOWN"), 2},
		}},
		{"saturated link_downed: the state witness still counts", []step{
			{ibPort("ACTIVE", 255), 0},
			{ibPort("DOWN", 255), 1},
			{ibPort("ACTIVE", 255), 1},
			{ibPort("DOWN", 255), 2},
		}},
		{"link_down_events_phy steps", []step{
			{rocePort("ACTIVE", 4), 0},
			{rocePort("ACTIVE", 5), 1},
			{rocePort("DOWN", 5), 1}, // the state sees the same link down
			{rocePort("ACTIVE", 8), 4},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(config.DefaultRules(), State{}, "boot")
			now := time.Unix(1_700_000_000, 0)
			for i, s := range c.steps {
				e.Cycle(now.Add(time.Duration(i)*time.Second), []Port{s.port}, nil)
				if got, ok := e.Episodes(s.port.Device, s.port.Port); !ok || got != s.want {
					t.Fatalf("step %d (%s): total %d, want %d", i, s.port.Link.State.Name, got, s.want)
				}
			}
		})
	}
}
