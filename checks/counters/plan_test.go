package counters

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

func TestCounters_7_1_PlanSkipsDisabled(t *testing.T) {
	defs, err := countertable.Merge(countertable.Defaults(), []countertable.Override{{Name: new("port_xmit_wait"), Enabled: new(false)}})
	if err != nil {
		t.Fatal(err)
	}
	plan := PlanFor(defs)
	if len(plan) != len(defs)-1 || find(plan, "port_xmit_wait") != nil {
		t.Fatalf("plan = %+v", plan)
	}
}

func TestCounters_5_2_FilesShared(t *testing.T) {
	plan := PlanFor(countertable.Defaults())
	groups := Files(plan)
	if len(groups) != len(plan)-1 {
		t.Fatalf("%d groups for %d definitions", len(groups), len(plan))
	}
	for _, g := range groups {
		if g.Path == "counters/symbol_error" {
			if !reflect.DeepEqual(g.Defs, []int{4, 5}) {
				t.Fatalf("symbol_error group = %v", g.Defs)
			}
			return
		}
	}
	t.Fatal("no counters/symbol_error group")
}

// TestCounters_SimDGXH100 runs against one simulated DGX H100 (building it
// is the slow part, so the cases share it).
func TestCounters_SimDGXH100(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("7_1_Availability", func(t *testing.T) { testAvailability(t, h) })
	t.Run("ReadEvaluateLoop", func(t *testing.T) { testSimHost(t, h) })
}

// testAvailability: the firmware lacks one counter.
func testAvailability(t *testing.T, h *sim.Host) {
	var ib, eth *sim.DeviceInfo
	devs := h.Devices()
	for i := range devs {
		switch {
		case devs[i].LinkLayer == topology.LinkLayerInfiniBand && ib == nil:
			ib = &devs[i]
		case devs[i].LinkLayer == topology.LinkLayerEthernet && eth == nil:
			eth = &devs[i]
		}
	}
	if ib == nil || eth == nil {
		t.Skip("shape has no IB and Ethernet device")
	}
	if err := h.RemoveFile(ib.Name, 1, "hw_counters/roce_slow_restart"); err != nil {
		t.Fatal(err)
	}
	netClass := filepath.Join(h.SysRoot(), "class", "net")
	portDir, _ := h.PortPath(ib.Name, 1, "")
	defs := countertable.Defaults()
	defs[12].Enabled = false // roce_slow_restart: disabled, so never listed
	present, missing := Availability(portDir, netClass, ib.NetDev, defs)
	if !reflect.DeepEqual(missing, []string(nil)) {
		t.Errorf("missing = %v (disabled counters must not be listed)", missing)
	}
	if len(present) != len(defs)-1 {
		t.Errorf("present = %v", present)
	}
	defs[12].Enabled = true
	_, missing = Availability(portDir, netClass, "", defs)
	if !reflect.DeepEqual(missing, []string{"roce_slow_restart", "carrier_changes"}) {
		t.Errorf("missing = %v", missing)
	}
	ethDir, _ := h.PortPath(eth.Name, 1, "")
	present, missing = Availability(ethDir, netClass, eth.NetDev, countertable.Defaults())
	if len(missing) != 0 || len(present) != len(countertable.Defaults()) {
		t.Errorf("RoCE port: present %v missing %v", present, missing)
	}
}

// testSimHost drives the evaluator from a simulated host the way the daemon
// does: read each planned file, parse it, evaluate.
func testSimHost(t *testing.T, h *sim.Host) {
	dev := h.Devices()[len(h.Devices())-1]
	netClass := filepath.Join(h.SysRoot(), "class", "net")
	portDir, _ := h.PortPath(dev.Name, 1, "")
	plan := PlanFor(countertable.Defaults())
	var portPlan []countertable.Definition
	for _, d := range plan {
		if d.AppliesTo(dev.LinkLayer) {
			portPlan = append(portPlan, d)
		}
	}
	r := newRig(t)
	r.dev, r.ll = dev.Name, dev.LinkLayer
	pollAll := func() (out []string) {
		t.Helper()
		for _, g := range Files(portPlan) {
			f := portPlan[g.Defs[0]].File(portDir, netClass, dev.NetDev)
			b, err := os.ReadFile(f)
			var v uint64
			if err == nil {
				v, err = sysfs.ParseCounter(b)
			}
			for _, i := range g.Defs {
				specs, _ := r.ev.Evaluate(r.st, Sample{Device: r.dev, Port: 1, LinkLayer: r.ll, Def: &portPlan[i],
					Value: v, Err: err, File: f, Now: r.now}, false)
				for _, s := range specs {
					out = append(out, string(s.Kind)+" "+s.ErrorCode[0])
				}
			}
		}
		return out
	}
	if ev := pollAll(); len(ev) != 0 {
		t.Fatalf("first poll: %v", ev)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.AddCounter(dev.Name, 1, "counters/link_downed", 1))
	r.at(1e9)
	if ev := pollAll(); !reflect.DeepEqual(ev, []string{"counter-breach link_downed"}) {
		t.Fatalf("after link_downed: %v", ev)
	}
	must(h.WriteRaw(dev.Name, 1, "counters/link_downed", "N/A (no PMA)\n"))
	must(h.RemoveFile(dev.Name, 1, "hw_counters/rnr_nak_retry_err"))
	r.at(2e9)
	if ev := pollAll(); len(ev) != 0 {
		t.Fatalf("unreadable/missing produced %v", ev)
	}
	must(h.SetCounter(dev.Name, 1, "counters/link_downed", 1))
	must(h.ResetCounters(dev.Name, 1))
	r.at(3e9)
	if ev := pollAll(); !reflect.DeepEqual(ev, []string{"counter-recovered link_downed"}) {
		t.Fatalf("after reset: %v", ev)
	}
	must(h.SetCounter(dev.Name, 1, "counters/port_xmit_discards", 65535))
	r.at(4e9)
	if ev := pollAll(); !reflect.DeepEqual(ev, []string{"counter-breach port_xmit_discards", "counter-saturated saturated:port_xmit_discards"}) {
		t.Fatalf("after saturation: %v", ev)
	}
	_, err := os.Stat(filepath.Join(portDir, "hw_counters/rnr_nak_retry_err"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat: %v", err)
	}
}
