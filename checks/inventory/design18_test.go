package inventory

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	pci "github.com/nichealth/nichealthd/topology/inventory"
)

// known is the port checks' memory of mlx5_3 at 0000:3b:00.0, monitored
// this boot with one port; reported says they said it disappeared.
func known(reported bool) func(string) KnownNIC {
	return func(addr string) KnownNIC {
		if addr != "0000:3b:00.0" {
			return KnownNIC{}
		}
		return KnownNIC{Device: "mlx5_3", Ports: []event.PortRef{{Device: "mlx5_3", Port: 1}}, Reported: reported}
	}
}

// poll is one state poll's judgement over the scan's functions.
func poll(mem *Memory, exp *Expected, i int, enumerated bool, k func(string) KnownNIC, fns ...pci.Function) []event.Spec {
	s := scan(bootA, t0.Add(time.Duration(i)*time.Second), fns...)
	s.Enumerated, s.Known = enumerated, k
	specs, _, _ := JudgeFunctions(mem, exp, s)
	return specs
}

// DESIGN.md difference 18: a function monitored this boot that loses its
// RDMA device (or its driver) at run time is a condition only at the third
// complete enumeration without it; polls whose listing failed do not
// count; the raise is the loss's one condition, naming the NIC's ports.
// One that comes back before says nothing and is no longer this check's
// to report.
func TestDesign_18_RunTimeLossWaitsForThreeEnumerations(t *testing.T) {
	for _, state := range []pci.State{pci.NoRDMA, pci.Unbound, pci.OtherDriver} {
		t.Run(string(state), func(t *testing.T) {
			mem, exp := NewMemory(), NewExpected()
			healthy, lost := fn("0000:3b:00.0", "mlx5_3", pci.Healthy), fn("0000:3b:00.0", "", state)
			if sp := poll(mem, exp, 0, true, known(false), healthy); len(sp) != 0 {
				t.Fatalf("healthy: %+v", sp)
			}
			for i, enumerated := range []bool{true, false, true} {
				if sp := poll(mem, exp, i+1, enumerated, known(false), lost); len(sp) != 0 {
					t.Fatalf("poll %d (enumerated %v) without the RDMA device: %+v", i+1, enumerated, sp)
				}
				if !mem.Reports("0000:3b:00.0") {
					t.Fatalf("poll %d: the loss waiting for its enumerations is not this check's to report", i+1)
				}
			}
			sp := poll(mem, exp, 4, true, known(false), lost)
			if len(sp) != 1 || sp[0].Kind != event.KindFunctionFailed || !sp[0].IsFatal || sp[0].Metadata["fault"] != string(state) ||
				fmt.Sprint(sp[0].Ports) != "[{mlx5_3 1}]" || sp[0].Metadata["lastDevice"] != "mlx5_3" {
				t.Fatalf("third enumeration: %+v", sp)
			}
			if sp := poll(mem, exp, 5, true, known(false), lost); len(sp) != 0 {
				t.Fatalf("raised twice: %+v", sp)
			}
			sp = poll(mem, exp, 6, true, known(false), healthy)
			if len(sp) != 1 || sp[0].Kind != event.KindFunctionOK || fmt.Sprint(sp[0].Ports) != "[{mlx5_3 1}]" || mem.Reports("0000:3b:00.0") {
				t.Fatalf("back: %+v", sp)
			}
		})
	}
	// Back after two enumerations (a driver reload): nothing, and nothing
	// pending.
	mem, exp := NewMemory(), NewExpected()
	poll(mem, exp, 0, true, known(false), fn("0000:3b:00.0", "mlx5_3", pci.Healthy))
	for i := 1; i <= 2; i++ {
		poll(mem, exp, i, true, known(false), fn("0000:3b:00.0", "", pci.NoRDMA))
	}
	if sp := poll(mem, exp, 3, true, known(false), fn("0000:3b:00.0", "mlx5_3", pci.Healthy)); len(sp) != 0 || mem.Reports("0000:3b:00.0") {
		t.Fatalf("reload: %+v, still reported here %v", sp, mem.Reports("0000:3b:00.0"))
	}
	// Lost again later: three more enumerations, not one.
	for i := 4; i <= 5; i++ {
		if sp := poll(mem, exp, i, true, known(false), fn("0000:3b:00.0", "", pci.NoRDMA)); len(sp) != 0 {
			t.Fatalf("second loss, poll %d: %+v", i, sp)
		}
	}
}

// The port check reported the NIC disappeared before a scan saw its
// function without it: that stays the one condition, nothing here.
func TestDesign_18_DisappearanceAlreadyReportedStaysTheOneCondition(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	poll(mem, exp, 0, true, known(true), fn("0000:3b:00.0", "mlx5_3", pci.Healthy))
	for i := 1; i <= 5; i++ {
		if sp := poll(mem, exp, i, true, known(true), fn("0000:3b:00.0", "", pci.Unbound)); len(sp) != 0 {
			t.Fatalf("poll %d: %+v", i, sp)
		}
	}
	if mem.Reports("0000:3b:00.0") {
		t.Fatal("a loss the port check reported is claimed here")
	}
}

// DESIGN.md difference 18: a function gone across a reboot (or never
// monitored this boot: a failed probe) is known at the first poll. The
// memory is boot-scoped; the expected inventory is not.
func TestDesign_18_FunctionGoneAcrossARebootIsImmediate(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	poll(mem, exp, 0, true, nil, fn("0000:3b:00.0", "mlx5_3", pci.Healthy))
	mem = NewMemory() // reboot
	s := scan(bootB, t0.Add(time.Hour), fn("0000:3b:00.0", "", pci.Unbound))
	s.Enumerated = true
	sp, _, _ := JudgeFunctions(mem, exp, s)
	if len(sp) != 1 || sp[0].Kind != event.KindFunctionFailed || len(sp[0].Ports) != 0 {
		t.Fatalf("first poll after the reboot: %+v", sp)
	}
}

// The three-scan sequence: the inventory must not forget a function
// monitored this boot once it is no longer monitored (without its RDMA
// device, or excluded by a reload), nor once it leaves the bus: a
// function seen monitored stays "monitored this boot" until the reboot.
func TestInventory_NeverForgetsAFunctionMonitoredThisBoot(t *testing.T) {
	excluded := fn("0000:3b:00.0", "mlx5_3", pci.Healthy)
	excluded.Monitored, excluded.LeftAlone = false, "excluded by the NIC filter"
	for _, tc := range []struct {
		name string
		mid  pci.Function
	}{
		{"without its RDMA device", fn("0000:3b:00.0", "", pci.NoRDMA)},
		{"excluded by a reload", excluded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, exp := NewMemory(), NewExpected()
			other := fn("0000:4c:00.0", "mlx5_4", pci.Healthy)
			poll(mem, exp, 0, true, known(false), fn("0000:3b:00.0", "mlx5_3", pci.Healthy), other)
			if sp := poll(mem, exp, 1, true, known(false), tc.mid, other); len(sp) != 0 {
				t.Fatalf("second scan: %+v", sp)
			}
			if !mem.Seen["0000:3b:00.0"] {
				t.Fatal("forgot that 0000:3b:00.0 was monitored this boot")
			}
			// Gone from the bus: its RDMA device was monitored this boot,
			// so the port check's disappearance is the one condition.
			for i := 2; i <= 5; i++ {
				if sp := poll(mem, exp, i, true, known(false), other); len(sp) != 0 {
					t.Fatalf("scan %d, gone from the bus: %+v", i+1, sp)
				}
			}
		})
	}
}
