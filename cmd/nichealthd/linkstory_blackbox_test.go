package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// A RoCE port-down event says why (DESIGN.md section 7): the simulated
// mlx5 driver of the test build reports "cable issue: unsupported cable"
// (nichealth-sim link-down), the port goes DOWN, and the fatal event's
// message and metadata carry the reason; the recovery carries none. An IB
// port going down says nothing of the sort (IPoIB has no extended state).
func TestLinkStory_BlackBoxRoCEPortDownSaysWhy(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.simulate() // the reason comes from nichealth-sim link-down, not a driver
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	n.start()
	n.waitEvent("RoCE baseline", portEvent(dev, event.KindPortBaseline))
	n.waitEvent("IB baseline", portEvent("mlx5_0", event.KindPortBaseline))
	out, err := exec.Command(simBinary(t), "link-down", "--root", n.h.Root, netdev, "cable_issue", "unsupported_cable").CombinedOutput()
	if err != nil {
		t.Fatalf("nichealth-sim link-down: %v: %s", err, out)
	}
	if err := n.h.SetPortState(dev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	e := n.waitEvent("RoCE port-down", portEvent(dev, event.KindPortFatal))
	if !strings.HasSuffix(e.Message, "; link down: cable issue: unsupported cable") ||
		e.Metadata["linkDownReason"] != "cable_issue" || e.Metadata["linkDownSubReason"] != "unsupported_cable" {
		t.Fatalf("port-down event %q %v: does not say why", e.Message, e.Metadata)
	}
	t.Logf("port-down: %s", e.Message)
	if err := n.h.SetPortState(dev, 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	r := n.waitEvent("RoCE recovery", portEvent(dev, event.KindPortRecovered))
	if strings.Contains(r.Message, "link down") || r.Metadata["linkDownReason"] != "" {
		t.Errorf("recovery %q %v carries a reason", r.Message, r.Metadata)
	}
	if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	ib := n.waitEvent("IB port-down", portEvent("mlx5_0", event.KindPortFatal))
	if strings.Contains(ib.Message, "link down") || ib.Metadata["linkDownReason"] != "" {
		t.Errorf("IB port-down %q %v says a reason", ib.Message, ib.Metadata)
	}
	n.stop()
}

func simRun(t *testing.T, root string, args ...string) {
	t.Helper()
	a := append([]string{args[0], "--root", root}, args[1:]...)
	if out, err := exec.Command(simBinary(t), a...).CombinedOutput(); err != nil {
		t.Fatalf("nichealth-sim %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func findingEvent(kind event.Kind, code string) func(e event.Event) bool {
	return func(e event.Event) bool {
		return e.Kind == kind && len(e.ErrorCode) == 1 && e.ErrorCode[0] == code
	}
}

// A module running hot and a lane with low Rx power are conditions on the
// right port naming the lane, the value and the module's own threshold
// (DESIGN.md section 7); the pass a port-down asks for reads the module
// again, and a module back inside its thresholds clears them.
func TestLinkStory_BlackBoxTransceiverConditions(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.simulate() // the modules come from nichealth-sim module, not a driver
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	simRun(t, n.h.Root, "module", netdev, "install")
	simRun(t, n.h.Root, "module", netdev, "temperature", "77")
	simRun(t, n.h.Root, "module", netdev, "rx", "3", "--", "-12")
	serial, err := n.h.ModuleSerial(netdev)
	if err != nil {
		t.Fatal(err)
	}
	n.start()
	hot := n.waitEvent("hot module", findingEvent(event.KindTransceiver, "module:temperature"))
	if hot.IsFatal || hot.Device() != dev || hot.Port() != "1" || hot.CheckName != event.TransceiverCheck ||
		!strings.Contains(hot.Message, "temperature 77.0 °C above the module's high warning threshold 75.0 °C") ||
		!strings.Contains(hot.Message, "serial "+serial) {
		t.Fatalf("hot module event %+v", hot)
	}
	low := n.waitEvent("low Rx lane", findingEvent(event.KindTransceiver, "module:rxPower:lane3"))
	if !low.IsFatal || low.Device() != dev || low.Metadata["lane"] != "3" || low.Metadata["serial"] != serial ||
		!strings.Contains(low.Message, "lane 3 Rx power -12.00 dBm below the module's low alarm threshold -11.55 dBm") ||
		!strings.Contains(low.Message, "replace the module (serial "+serial+")") {
		t.Fatalf("low Rx event %+v", low)
	}
	t.Logf("%s\n%s", hot.Message, low.Message)
	n.waitMetric("lane 3's received power", "nichealth_module_rx_power_watts", func(m map[string]float64) bool {
		for k, v := range m {
			if strings.HasPrefix(k, "nichealth_module_rx_power_watts{") && strings.Contains(k, `device="mlx5_8"`) && strings.Contains(k, `lane="3"`) {
				return v > 6.2e-5 && v < 6.4e-5 // -12 dBm
			}
		}
		return false
	})
	// The module cools down and the lane's light comes back; a port-down
	// asks for a pass at once (no minute's wait).
	simRun(t, n.h.Root, "module", netdev, "install")
	if err := n.h.SetPortState(dev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("temperature clear", findingEvent(event.KindTransceiverOK, "module:temperature"))
	n.waitEvent("Rx clear", findingEvent(event.KindTransceiverOK, "module:rxPower:lane3"))
	n.stop()
}

// A fw_fatal health report is a fatal condition on the function's ports,
// and running ≠ stored firmware a degraded finding; both clear when devlink
// says otherwise.
func TestLinkStory_BlackBoxFirmwareHealth(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.simulate() // devlink comes from nichealth-sim devlink, not a driver
	simRun(t, n.h.Root, "devlink", "mlx5_0", "report", "fw_fatal")
	simRun(t, n.h.Root, "devlink", "mlx5_1", "firmware", "28.39.1002", "28.40.1000")
	n.start()
	f := n.waitEvent("fw_fatal", findingEvent(event.KindFirmwareHealth, "devlink:fw_fatal"))
	if !f.IsFatal || f.Device() != "mlx5_0" || f.CheckName != event.FirmwareHealthCheck || !strings.Contains(f.Message, "in error state") {
		t.Fatalf("fw_fatal event %+v", f)
	}
	a := n.waitEvent("activation pending", findingEvent(event.KindFirmwareHealth, "firmware-activation-pending"))
	if a.IsFatal || a.Device() != "mlx5_1" || !strings.Contains(a.Message, "firmware activation pending: 28.40.1000 is flashed, 28.39.1002 runs") {
		t.Fatalf("activation event %+v", a)
	}
	t.Logf("%s\n%s", f.Message, a.Message)
	simRun(t, n.h.Root, "devlink", "mlx5_0", "recover", "fw_fatal")
	simRun(t, n.h.Root, "devlink", "mlx5_1", "firmware", "28.40.1000", "28.40.1000")
	if err := n.h.SetPortState("mlx5_2", 1, "DOWN", "Disabled"); err != nil { // asks for a pass
		t.Fatal(err)
	}
	n.waitEvent("fw_fatal clear", findingEvent(event.KindFirmwareHealthOK, "devlink:fw_fatal"))
	n.waitEvent("activation clear", findingEvent(event.KindFirmwareHealthOK, "firmware-activation-pending"))
	n.stop()
}

// The production binary on a host without these interfaces for its
// netdevs (a simulated tree: no such netdev here, no devlink in this
// kernel) raises nothing of them and says each reason once, however many
// passes run.
func TestLinkStory_BlackBoxNothingRaisedNothingRepeated(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("RoCE baseline", portEvent("mlx5_8", event.KindPortBaseline))
	for i, dev := range []string{"mlx5_8", "mlx5_9", "mlx5_8"} {
		state := "DOWN"
		phys := "Disabled"
		if i == 2 {
			state, phys = "ACTIVE", "LinkUp"
		}
		if err := n.h.SetPortState(dev, 1, state, phys); err != nil {
			t.Fatal(err)
		}
		n.waitEvent("port change", func(e event.Event) bool {
			return e.Device() == dev && (e.Kind == event.KindPortFatal || e.Kind == event.KindPortRecovered)
		})
	}
	n.stop()
	for _, e := range n.read() {
		if e.CheckName == event.TransceiverCheck && e.Kind != event.KindCheckCleared || e.CheckName == event.FirmwareHealthCheck && e.Kind != event.KindCheckCleared {
			t.Errorf("raised on a host without the interfaces: %+v", e)
		}
		if e.Metadata["linkDownReason"] != "" {
			t.Errorf("a reason on a host whose driver gives none: %+v", e)
		}
	}
	// Each line without its time stamp: a reason said again is the same
	// line at another time.
	counts := map[string]int{}
	for _, line := range strings.Split(n.stderr.String(), "\n") {
		if strings.Contains(line, "netlink") || strings.Contains(line, "devlink") || strings.Contains(line, "transceiver") {
			if _, rest, ok := strings.Cut(line, " "); ok && strings.HasPrefix(line, "time=") {
				line = rest
			}
			counts[line]++
		}
	}
	if len(counts) == 0 {
		t.Errorf("the daemon never said why the link story is not read:\n%s", n.stderr.Tail())
	}
	for line, c := range counts {
		if c > 1 {
			t.Errorf("said %d times: %s", c, line)
		}
	}
}

// Issue 40 row 9: a passive copper DAC in an up port raises nothing (no
// dark lanes, no 0 mA bias, no temperature from its bytes 22-23), and an
// SFP28's diagnostics reach /metrics decoded from A2h, judged like the
// others'.
func TestIssue40_Row9_BlackBoxDACAndSFP28(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.simulate()
	const dacDev, dacNetdev, optDev, optNetdev = "mlx5_8", "enp65s0f0np0", "mlx5_9", "enp65s0f1np0"
	simRun(t, n.h.Root, "module", dacNetdev, "install", "dac")
	simRun(t, n.h.Root, "module", optNetdev, "install")
	simRun(t, n.h.Root, "module", optNetdev, "temperature", "77")
	n.start()
	// The pass that raised the OSFP's temperature judged the DAC too.
	n.waitEvent("hot module", findingEvent(event.KindTransceiver, "module:temperature"))
	simRun(t, n.h.Root, "module", optNetdev, "install", "sfp28")
	if err := n.h.SetPortState(optDev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err) // a port-down asks for a pass at once
	}
	n.waitEvent("temperature clear", findingEvent(event.KindTransceiverOK, "module:temperature"))
	n.waitMetric("the SFP28's received power", "nichealth_module_rx_power_watts", func(m map[string]float64) bool {
		for k, v := range m {
			if strings.HasPrefix(k, "nichealth_module_rx_power_watts{") && strings.Contains(k, `device="mlx5_9"`) && strings.Contains(k, `lane="1"`) {
				return v > 4.9e-4 && v < 5.1e-4 // 0.5 mW from A2h bytes 104-105
			}
		}
		return false
	})
	n.stop()
	for _, e := range n.read() {
		if e.CheckName == event.TransceiverCheck && e.Device() == dacDev {
			t.Errorf("the passive DAC raised %+v", e)
		}
	}
}
