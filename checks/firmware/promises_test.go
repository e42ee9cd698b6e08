package firmware

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
)

// onePass runs the check over one observation and returns its events.
func onePass(c *Check, now time.Time, reps []devlink.Reporter, in devlink.Info) []event.Spec {
	d := &topology.Device{Name: "mlx5_0", PCIAddress: pci}
	port := &observe.Port{Device: d, Port: &topology.Port{Num: 1}}
	obs := &observe.Observation{Now: now, StatePoll: true, Ports: []*observe.Port{port}}
	obs.LinkStory = observe.LinkStory{Open: true, New: true, At: now, Reporters: reps, Infos: []devlink.Info{in}}
	var out []event.Spec
	cy := checks.NewCycle(boundary{})
	cy.Reset(obs, &out)
	c.Run(cy)
	return out
}

var t0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

// TestFirmware_40_12_ActivationComparedAsVersions: the flashed firmware is
// told from the running one as versions: 28.9 → 28.10 is an upgrade (a
// string comparison calls it older), 28.10 → 28.9 a rollback said as
// one, and the same version written with a leading zero is no activation
// at all.
func TestFirmware_40_12_ActivationComparedAsVersions(t *testing.T) {
	for _, tc := range []struct {
		running, stored string
		want            string // "": no finding
		rollback        bool
	}{
		{"28.9.1000", "28.10.1000", "28.10.1000 is flashed, 28.9.1000 runs", false},
		{"28.10.1000", "28.9.1000", "28.9.1000 is flashed, 28.10.1000 runs: a rollback to an older firmware", true},
		{"28.39.1002", "28.39.998", "28.39.998 is flashed, 28.39.1002 runs: a rollback", true},
		{"16.35.2000", "16.35.02000", "", false},
		{"28.39.1002", "28.39.1002", "", false},
	} {
		out := onePass(NewCheck(), t0, nil, info(tc.running, tc.stored))
		if tc.want == "" {
			if len(out) != 0 {
				t.Errorf("%s running, %s flashed: %+v, want no finding", tc.running, tc.stored, out)
			}
			continue
		}
		if len(out) != 1 || out[0].ErrorCode[0] != ActivationFinding || out[0].IsFatal || !strings.Contains(out[0].Message, tc.want) {
			t.Errorf("%s running, %s flashed: %+v, want a warning saying %q", tc.running, tc.stored, out, tc.want)
			continue
		}
		if dir := out[0].Metadata["direction"]; (dir == "rollback") != tc.rollback {
			t.Errorf("%s running, %s flashed: direction %q, rollback %v", tc.running, tc.stored, dir, tc.rollback)
		}
	}
}

// TestFirmware_40_12_SeverityByReporterNotByState: fw_fatal is fatal
// whether it still says "error" or has already recovered (the firmware
// crashed: the card's state is suspect either way); any other reporter is
// a warning even in error state.
func TestFirmware_40_12_SeverityByReporterNotByState(t *testing.T) {
	same := info("28.39.1002", "28.39.1002")
	for _, tc := range []struct {
		name  string
		first []devlink.Reporter
		next  []devlink.Reporter
		fatal bool
	}{
		{"fw_fatal recovered", []devlink.Reporter{rep("fw_fatal", false, 0, 0)}, []devlink.Reporter{rep("fw_fatal", false, 1, 1)}, true},
		{"fw_fatal in error", []devlink.Reporter{rep("fw_fatal", false, 0, 0)}, []devlink.Reporter{rep("fw_fatal", true, 1, 0)}, true},
		{"fw in error", []devlink.Reporter{rep("fw", false, 0, 0)}, []devlink.Reporter{rep("fw", true, 1, 0)}, false},
		{"tx in error", []devlink.Reporter{rep("tx", false, 0, 0)}, []devlink.Reporter{rep("tx", true, 5, 0)}, false},
	} {
		c := NewCheck()
		if out := onePass(c, t0, tc.first, same); len(out) != 0 {
			t.Fatalf("%s: baseline raised %+v", tc.name, out)
		}
		out := onePass(c, t0.Add(time.Minute), tc.next, same)
		if len(out) != 1 || out[0].IsHealthy || out[0].IsFatal != tc.fatal {
			t.Errorf("%s: %+v, want one finding, fatal %v", tc.name, out, tc.fatal)
		}
	}
}

// TestFirmware_40_12_PerPortReportersKeptApart: the per-port reporters
// (tx, rx) of one function share a name: port 1's and port 2's are two
// findings with two error counts, so port 2's first error is not hidden
// by port 1's count, nor port 1's recovery taken for port 2's.
func TestFirmware_40_12_PerPortReportersKeptApart(t *testing.T) {
	same := info("28.39.1002", "28.39.1002")
	tx := func(port uint32, errs uint64, inError bool) devlink.Reporter {
		r := rep("tx", inError, errs, errs)
		if inError {
			r.RecoverCount = errs - 1
		}
		r.HasPort, r.Port = true, port
		return r
	}
	c := NewCheck()
	if out := onePass(c, t0, []devlink.Reporter{tx(1, 4, false), tx(2, 0, false)}, same); len(out) != 0 {
		t.Fatalf("baseline: %+v", out)
	}
	// Port 2 errs (its first), port 1 unchanged at 4.
	out := onePass(c, t0.Add(time.Minute), []devlink.Reporter{tx(1, 4, false), tx(2, 1, true)}, same)
	if len(out) != 1 || out[0].ErrorCode[0] != "devlink:tx:port2" || out[0].IsHealthy {
		t.Fatalf("port 2's first error: %+v, want devlink:tx:port2 alone", out)
	}
	// Port 1 recovers nothing new; port 2 recovers: only port 2's ends.
	out = onePass(c, t0.Add(2*time.Minute), []devlink.Reporter{tx(1, 4, false), tx(2, 1, false)}, same)
	if len(out) != 1 || out[0].ErrorCode[0] != "devlink:tx:port2" || !out[0].IsHealthy {
		t.Fatalf("port 2 recovered: %+v", out)
	}
}
