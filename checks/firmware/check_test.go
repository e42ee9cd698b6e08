package firmware

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
)

type boundary struct{}

func (boundary) Run(_ string, _ []string, fn func()) { fn() }
func (boundary) Enter(string)                        {}
func (boundary) Failed(string) bool                  { return false }

const pci = "0000:3b:00.0"

var dev = devlink.Device{Bus: "pci", Name: pci}

func rep(name string, inError bool, errs, recovers uint64) devlink.Reporter {
	return devlink.Reporter{Device: dev, Name: name, Error: inError, ErrorCount: errs, RecoverCount: recovers}
}

func info(running, stored string) devlink.Info {
	return devlink.Info{Device: dev, Driver: "mlx5_core", Fixed: map[string]string{"fw.psid": "MT_0000000838"},
		Running: map[string]string{"fw.version": running}, Stored: map[string]string{"fw.version": stored}}
}

type pass struct {
	reps []devlink.Reporter
	info devlink.Info
	err  error
	want []string
}

func run(t *testing.T, c *Check, steps []pass) {
	t.Helper()
	d := &topology.Device{Name: "mlx5_0", PCIAddress: pci}
	port := &observe.Port{Device: d, Port: &topology.Port{Num: 1}}
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for i, s := range steps {
		obs := &observe.Observation{Now: now, StatePoll: true, Ports: []*observe.Port{port}}
		obs.LinkStory = observe.LinkStory{Open: true, New: true, At: now, Reporters: s.reps, Infos: []devlink.Info{s.info}, DevlinkErr: s.err}
		var out []event.Spec
		cy := checks.NewCycle(boundary{})
		cy.Reset(obs, &out)
		c.Run(cy)
		var got []string
		for _, sp := range out {
			switch {
			case sp.IsHealthy:
				got = append(got, "-"+sp.ErrorCode[0])
			case sp.IsFatal:
				got = append(got, "+fatal "+sp.ErrorCode[0])
			default:
				got = append(got, "+warn "+sp.ErrorCode[0])
			}
			if len(sp.Ports) != 1 || sp.Ports[0] != (event.PortRef{Device: "mlx5_0", Port: 1}) || sp.Metadata["pci"] != pci {
				t.Errorf("pass %d: %+v: must name the function's ports and its PCI address", i, sp)
			}
			if strings.Contains(sp.ErrorCode[0], "fw_fatal") && !sp.IsHealthy && !strings.Contains(sp.Message, "reset the function or reboot") {
				t.Errorf("fw_fatal message %q lacks the fix", sp.Message)
			}
			if sp.ErrorCode[0] == ActivationFinding && !sp.IsHealthy && !strings.Contains(sp.Message, "firmware activation pending: 28.40.1000 is flashed, 28.39.1002 runs. Fix: reset the function (mlxfwreset) or reboot") {
				t.Errorf("activation message %q", sp.Message)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("pass %d: events %q, want %q", i, got, s.want)
		}
		now = now.Add(time.Minute)
	}
}

// DESIGN.md section 7: a reporter in error state, or whose error count
// moved, is a condition, fatal for fw_fatal and degraded for the others;
// errors counted before the first pass are history; running ≠ stored
// firmware is "firmware activation pending: reset or reboot".
func TestDesign_7_FirmwareHealth(t *testing.T) {
	same := info("28.39.1002", "28.39.1002")
	run(t, NewCheck(), []pass{
		{reps: []devlink.Reporter{rep("fw", false, 3, 3), rep("fw_fatal", false, 0, 0)}, info: same},
		{reps: []devlink.Reporter{rep("fw", false, 4, 4), rep("fw_fatal", false, 0, 0)}, info: same, want: []string{"+warn devlink:fw"}},
		{reps: []devlink.Reporter{rep("fw", false, 4, 4), rep("fw_fatal", true, 1, 0)}, info: same, want: []string{"+fatal devlink:fw_fatal", "-devlink:fw"}},
		{reps: []devlink.Reporter{rep("fw", false, 4, 4), rep("fw_fatal", true, 1, 0)}, info: same},
		{reps: []devlink.Reporter{rep("fw", false, 4, 4), rep("fw_fatal", false, 1, 1)}, info: same, want: []string{"-devlink:fw_fatal"}},
		{reps: []devlink.Reporter{rep("fw", false, 4, 4)}, info: info("28.39.1002", "28.40.1000"), want: []string{"+warn " + ActivationFinding}},
		{reps: []devlink.Reporter{rep("fw", false, 4, 4)}, info: info("28.40.1000", "28.40.1000"), want: []string{"-" + ActivationFinding}},
	})
}

// A reporter already in error at the first pass is a condition; a kernel
// without devlink, or a pass that failed, changes nothing.
func TestDesign_7_FirmwareHealthFirstPassAndNoDevlink(t *testing.T) {
	c := NewCheck()
	run(t, c, []pass{
		{err: fmt.Errorf("no devlink")},
		{reps: []devlink.Reporter{rep("fw_fatal", true, 1, 0)}, info: info("1", "1"), want: []string{"+fatal devlink:fw_fatal"}},
		{err: fmt.Errorf("timeout")},
	})
	raw, _ := c.Marshal()
	d := NewCheck()
	if dropped := d.Restore(raw); len(dropped) != 0 {
		t.Fatal(dropped)
	}
	run(t, d, []pass{{reps: []devlink.Reporter{rep("fw_fatal", false, 1, 1)}, info: info("1", "1"), want: []string{"-devlink:fw_fatal"}}})
}
