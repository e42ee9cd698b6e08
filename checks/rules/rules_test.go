package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"

	"github.com/nichealth/nichealthd/event"
)

var t0 = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

// at is T+m:s of the seeds' timelines.
func at(m, s int) time.Time {
	return t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

func ib(state string, linkDowned uint64) Port {
	return Port{Device: "mlx5_0", Port: 1, Link: linkOf(state), LinkDowned: Reading{linkDowned, true}}
}

// run feeds one port reading per step and returns the changes of each.
type step struct {
	at   time.Time
	port Port
}

func run(t *testing.T, e *Engine, steps []step) [][]Change {
	t.Helper()
	var out [][]Change
	for _, s := range steps {
		out = append(out, e.Cycle(s.at, []Port{s.port}, nil))
	}
	return out
}

func only(t *testing.T, cs []Change, raise bool, check string) Condition {
	t.Helper()
	if len(cs) != 1 || cs[0].Raise != raise || cs[0].Condition.Check != check {
		t.Fatalf("changes %+v, want one %s raise=%v", cs, check, raise)
	}
	return cs[0].Condition
}

func none(t *testing.T, what string, cs []Change) {
	t.Helper()
	if len(cs) != 0 {
		t.Fatalf("%s: unexpected changes %+v", what, cs)
	}
}

// Seed state 6.3, the link flap detection flow: link_downed on mlx5_0 port
// 1 at T+1:30, T+4:20 and T+7:10 (each DOWN, back ACTIVE 15 s later). The
// third is fatal, REPLACE_VM, "NIC port flapping detected"; the
// stabilization window (30 minutes) holds it until T+37:10.
func TestRules_6_3_SeedFlapTimelineAndStabilization(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "boot-1")
	cs := run(t, e, []step{
		{at(0, 0), ib("ACTIVE", 0)},
		{at(1, 30), ib("DOWN", 1)},
		{at(1, 45), ib("ACTIVE", 1)},
		{at(4, 20), ib("DOWN", 2)},
		{at(4, 35), ib("ACTIVE", 2)},
	})
	for _, c := range cs {
		none(t, "before the third", c)
	}
	c := only(t, e.Cycle(at(7, 10), []Port{ib("DOWN", 3)}, nil), true, event.FlapCheck)
	if !c.Fatal || c.Action != event.ActionReplaceVM || c.Device != "mlx5_0" || c.Port != 1 ||
		!strings.Contains(c.Message, "NIC port flapping detected") || !strings.HasPrefix(c.Message, "Port mlx5_0 port 1: ") {
		t.Fatalf("flap condition %+v", c)
	}
	// Stable from T+7:25 on: held through the window, cleared at its end.
	none(t, "T+7:25", e.Cycle(at(7, 25), []Port{ib("ACTIVE", 3)}, nil))
	none(t, "T+17:10 (the 10-minute count is below 3 again)", e.Cycle(at(17, 10), []Port{ib("ACTIVE", 3)}, nil))
	none(t, "T+37:09", e.Cycle(at(37, 9), []Port{ib("ACTIVE", 3)}, nil))
	only(t, e.Cycle(at(37, 10), []Port{ib("ACTIVE", 3)}, nil), false, event.FlapCheck)
	none(t, "after the clear", e.Cycle(at(40, 0), []Port{ib("ACTIVE", 3)}, nil))
}

func TestRules_6_3_EpisodeCountedOnceAndWindowed(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "b")
	// Two episodes each seen by link_downed and by the state fall: 2, not 4.
	for _, s := range []step{
		{at(0, 0), ib("ACTIVE", 0)},
		{at(1, 0), ib("DOWN", 1)},
		{at(1, 5), ib("ACTIVE", 1)},
		{at(2, 0), ib("DOWN", 2)},
		{at(2, 5), ib("ACTIVE", 2)},
	} {
		none(t, s.at.Format("T+04:05"), e.Cycle(s.at, []Port{s.port}, nil))
	}
	// The third 10 minutes after the first: the first is out of the window.
	none(t, "third after the window", e.Cycle(at(11, 0), []Port{ib("ACTIVE", 3)}, nil))
	// A fourth within 10 minutes of the second and third: flapping.
	only(t, e.Cycle(at(11, 30), []Port{ib("ACTIVE", 4)}, nil), true, event.FlapCheck)
}

// Seed state 6.2, NICPortDrop: DOWN for at least 4 minutes with no
// link_downed change is fatal "port dropped"; a port that keeps retrying
// is not dropped; back ACTIVE clears it.
func TestRules_6_2_SeedPortDrop(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "b")
	none(t, "baseline", e.Cycle(at(0, 0), []Port{ib("ACTIVE", 5)}, nil))
	none(t, "the fall", e.Cycle(at(2, 0), []Port{ib("DOWN", 6)}, nil))
	none(t, "T+5:59", e.Cycle(at(5, 59), []Port{ib("DOWN", 6)}, nil))
	c := only(t, e.Cycle(at(6, 0), []Port{ib("DOWN", 6)}, nil), true, event.DropCheck)
	if !c.Fatal || c.Action != event.ActionReplaceVM || !strings.Contains(c.Message, "port dropped") {
		t.Fatalf("drop condition %+v", c)
	}
	none(t, "still down", e.Cycle(at(9, 0), []Port{ib("DOWN", 6)}, nil))
	only(t, e.Cycle(at(9, 30), []Port{ib("ACTIVE", 6)}, nil), false, event.DropCheck)

	// Retrying: link_downed moves every 3 minutes while DOWN.
	r := New(config.DefaultRules(), State{}, "b")
	for i, s := range []step{
		{at(0, 0), ib("ACTIVE", 0)}, {at(1, 0), ib("DOWN", 1)}, {at(4, 0), ib("DOWN", 2)},
		{at(7, 0), ib("DOWN", 3)}, {at(10, 59), ib("DOWN", 3)},
	} {
		for _, c := range r.Cycle(s.at, []Port{s.port}, nil) {
			if c.Condition.Check == event.DropCheck {
				t.Fatalf("step %d: a retrying port dropped: %+v", i, c)
			}
		}
	}
	if cs := r.Cycle(at(11, 0), []Port{ib("DOWN", 3)}, nil); len(cs) != 1 || cs[0].Condition.Check != event.DropCheck {
		t.Fatalf("4 minutes after the last retry: %+v", cs)
	}
}

// TestRules_Degradation_1_4_FiveNonFatalIn24Hours: seed counter 1.4 and
// 3.1, RepeatedNICDegradation: "5+ non-fatal events in 24h → FATAL"
// (DESIGN.md difference 15).
func TestRules_Degradation_1_4_FiveNonFatalIn24Hours(t *testing.T) {
	if c := config.DefaultRules().Degradation; c.Events != 5 || c.Window != 24*time.Hour || event.DegradationCheck != "RepeatedNICDegradation" {
		t.Fatalf("defaults %+v %q, the seed says 5 in 24h, RepeatedNICDegradation", c, event.DegradationCheck)
	}
	e := New(config.DefaultRules(), State{}, "b")
	p := []Port{ib("ACTIVE", 0)}
	nf := func(check, counter string, since time.Time) Degraded {
		return Degraded{Key: check + "|mlx5_0/1 " + counter, Device: "mlx5_0", Port: 1, Since: since}
	}
	h := func(hours int) time.Time { return at(60*hours, 0) }
	none(t, "first", e.Cycle(h(0), p, []Degraded{nf("InfiniBandDegradationCheck", "symbol_error", h(0))}))
	// Still active next cycle: the same event, not a second one.
	none(t, "same", e.Cycle(at(0, 1), p, []Degraded{nf("InfiniBandDegradationCheck", "symbol_error", h(0))}))
	none(t, "cleared", e.Cycle(h(1), p, nil))
	for i, hr := range []int{5, 10, 15} {
		none(t, fmt.Sprintf("event %d", i+2), e.Cycle(h(hr), p, []Degraded{nf("InfiniBandStateCheck", "", h(hr))}))
		none(t, "gone", e.Cycle(h(hr).Add(time.Minute), p, nil))
	}
	c := only(t, e.Cycle(h(20), p, []Degraded{nf("InfiniBandDegradationCheck", "port_rcv_errors", h(20))}), true, event.DegradationCheck)
	if !c.Fatal || c.Action != event.ActionReplaceVM {
		t.Fatalf("fifth event within 24h: %+v, want fatal REPLACE_VM", c)
	}
	// Cleared once fewer than 5 remain in the window and none is active.
	none(t, "still active", e.Cycle(h(25), p, []Degraded{nf("InfiniBandDegradationCheck", "port_rcv_errors", h(20))}))
	only(t, e.Cycle(h(25).Add(time.Minute), p, nil), false, event.DegradationCheck)

	// Spread over more than 24 hours: no escalation; the rules' own
	// conditions do not count.
	s := New(config.DefaultRules(), State{}, "b")
	for i, tm := range []time.Time{h(0), h(7), h(14), h(21), h(28)} {
		conds := []Degraded{nf("X", fmt.Sprintf("c%d", i), tm),
			{Key: event.FlapCheck + "|mlx5_0/1", Device: "mlx5_0", Port: 1, Since: tm},
			{Key: event.DegradationCheck + "|mlx5_0/1", Device: "mlx5_0", Port: 1, Since: tm}}
		none(t, "spread", s.Cycle(tm, p, conds))
	}
}

// The windows survive a restart on the same boot (the state file) and are
// cleared by a reboot.
func TestRules_WindowsPersistAndClearOnReboot(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "boot-1")
	run(t, e, []step{{at(0, 0), ib("ACTIVE", 0)}, {at(1, 0), ib("ACTIVE", 1)}, {at(2, 0), ib("ACTIVE", 2)}})
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	same := New(config.DefaultRules(), st, "boot-1")
	only(t, same.Cycle(at(3, 0), []Port{ib("ACTIVE", 3)}, nil), true, event.FlapCheck)
	if act := same.Active(at(3, 1)); len(act) != 1 || act[0].Check != event.FlapCheck {
		t.Fatalf("active after raise: %+v", act)
	}
	rebooted := New(config.DefaultRules(), st, "boot-2")
	none(t, "after reboot: the first reading is a baseline", rebooted.Cycle(at(3, 0), []Port{ib("ACTIVE", 0)}, nil))
	none(t, "after reboot", rebooted.Cycle(at(3, 5), []Port{ib("ACTIVE", 1)}, nil))
}

// Live reload: a shortened stabilization takes effect at the next cycle;
// switching a rule off clears its condition.
func TestRules_ReloadTunesAndSwitchesOff(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "b")
	run(t, e, []step{{at(0, 0), ib("ACTIVE", 0)}})
	only(t, e.Cycle(at(0, 10), []Port{ib("ACTIVE", 3)}, nil), true, event.FlapCheck)
	cfg := config.DefaultRules()
	cfg.Flap.Stabilization = 2 * time.Minute
	none(t, "reload", e.SetConfig(cfg))
	none(t, "T+2:09", e.Cycle(at(2, 9), []Port{ib("ACTIVE", 3)}, nil))
	only(t, e.Cycle(at(2, 10), []Port{ib("ACTIVE", 3)}, nil), false, event.FlapCheck)

	only(t, e.Cycle(at(3, 0), []Port{ib("ACTIVE", 6)}, nil), true, event.FlapCheck)
	cfg.Flap.Enabled = false
	only(t, e.SetConfig(cfg), false, event.FlapCheck)
	none(t, "off", e.Cycle(at(3, 10), []Port{ib("ACTIVE", 9)}, nil))
}

func TestRules_VanishedPortClearsItsConditions(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "b")
	run(t, e, []step{{at(0, 0), ib("ACTIVE", 0)}})
	only(t, e.Cycle(at(0, 10), []Port{ib("ACTIVE", 3)}, nil), true, event.FlapCheck)
	only(t, e.Cycle(at(0, 20), nil, nil), false, event.FlapCheck)
}

func TestRules_ConfigValidate(t *testing.T) {
	if err := config.DefaultRules().Validate(); err != nil {
		t.Fatal(err)
	}
	c := config.DefaultRules()
	c.Flap.Episodes, c.Drop.After = 0, 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "flap episodes 0") || !strings.Contains(err.Error(), "drop after 0s") {
		t.Fatalf("%v", err)
	}
}
