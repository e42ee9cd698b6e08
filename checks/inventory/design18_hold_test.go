package inventory

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	pci "github.com/nichealth/nichealthd/topology/inventory"
)

// clockedPolls drives JudgeFunctions as the daemon's poll loop does at
// one poll interval, on an injected clock: every poll a complete
// enumeration, the function's state what lost(now) says.
type clockedPolls struct {
	mem   *Memory
	exp   *Expected
	every time.Duration
	hold  time.Duration
	now   time.Time
}

func newClockedPolls(every, hold time.Duration) *clockedPolls {
	p := &clockedPolls{mem: NewMemory(), exp: NewExpected(), every: every, hold: hold, now: t0}
	p.poll(false)
	return p
}

// poll advances the clock by one interval (not for the first) and judges
// the function, with or without its RDMA device.
func (p *clockedPolls) poll(lost bool) []event.Spec {
	f := fn("0000:3b:00.0", "mlx5_3", pci.Healthy)
	if lost {
		f = fn("0000:3b:00.0", "", pci.NoRDMA)
	}
	s := scan(bootA, p.now, f)
	s.Enumerated, s.Known, s.LostHold = true, known(false), p.hold
	sp, _, _ := JudgeFunctions(p.mem, p.exp, s)
	p.now = p.now.Add(p.every)
	return sp
}

// DESIGN.md difference 18, time not polls: a measured mlx5_ib reload
// (1.5 s without the RDMA device) is silent at a 250 ms poll and at a 1 s
// poll, with the default hold of 30 s; a function lost for good is raised
// at the first poll 30 s after the first that saw it gone, not before,
// whatever the poll interval.
func TestDesign_18_LossIsHeldInTimeNotPolls(t *testing.T) {
	const hold = 30 * time.Second // config.DefaultLostFunctionHold, pinned
	for _, every := range []time.Duration{250 * time.Millisecond, time.Second} {
		t.Run(every.String(), func(t *testing.T) {
			p := newClockedPolls(every, hold)
			// The reload: 1.5 s without the RDMA device.
			for range int(1500 * time.Millisecond / every) {
				if sp := p.poll(true); len(sp) != 0 {
					t.Fatalf("a 1.5 s mlx5_ib reload at a %v poll raised %+v", every, sp)
				}
			}
			if sp := p.poll(false); len(sp) != 0 || p.mem.Reports("0000:3b:00.0") {
				t.Fatalf("back after the reload: %+v, still pending %v", sp, p.mem.Reports("0000:3b:00.0"))
			}

			// Lost for good: silent for 30 s, raised at 30 s.
			first := p.now
			for p.now.Sub(first) < hold {
				if sp := p.poll(true); len(sp) != 0 {
					t.Fatalf("raised after %v, before the 30 s hold: %+v", p.now.Add(-every).Sub(first), sp)
				}
			}
			sp := p.poll(true)
			if len(sp) != 1 || sp[0].Kind != event.KindFunctionFailed || !sp[0].IsFatal {
				t.Fatalf("not raised at 30 s: %+v", sp)
			}
		})
	}
}

// The hold does not replace the enumerations: past the hold, a loss still
// waits for its 3 complete enumerations (polls whose listing of
// class/infiniband failed do not count); and a hold of 0 leaves the
// enumerations alone.
func TestDesign_18_HoldAndThreeEnumerationsBothNeeded(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	judge := func(at time.Duration, enumerated bool, hold time.Duration, f pci.Function) []event.Spec {
		s := scan(bootA, t0.Add(at), f)
		s.Enumerated, s.Known, s.LostHold = enumerated, known(false), hold
		sp, _, _ := JudgeFunctions(mem, exp, s)
		return sp
	}
	lost := fn("0000:3b:00.0", "", pci.Unbound)
	judge(0, true, 30*time.Second, fn("0000:3b:00.0", "mlx5_3", pci.Healthy))
	judge(time.Second, true, 30*time.Second, lost)
	if sp := judge(time.Minute, false, 30*time.Second, lost); len(sp) != 0 {
		t.Fatalf("raised a minute later with one enumeration: %+v", sp)
	}
	if sp := judge(2*time.Minute, true, 30*time.Second, lost); len(sp) != 0 {
		t.Fatalf("raised two minutes later with two enumerations: %+v", sp)
	}
	if sp := judge(2*time.Minute+time.Second, true, 30*time.Second, lost); len(sp) != 1 {
		t.Fatalf("not raised at the third enumeration past the hold: %+v", sp)
	}

	mem, exp = NewMemory(), NewExpected()
	judge(0, true, 0, fn("0000:3b:00.0", "mlx5_3", pci.Healthy))
	for i := 1; i <= 2; i++ {
		if sp := judge(time.Duration(i)*time.Millisecond, true, 0, lost); len(sp) != 0 {
			t.Fatalf("hold 0, enumeration %d: %+v", i, sp)
		}
	}
	if sp := judge(3*time.Millisecond, true, 0, lost); len(sp) != 1 {
		t.Fatalf("hold 0, third enumeration: %+v", sp)
	}
}

// DESIGN.md difference 18: a function gone across a reboot is known at
// the first poll whatever the hold.
func TestDesign_18_RebootLossIgnoresTheHold(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	poll(mem, exp, 0, true, nil, fn("0000:3b:00.0", "mlx5_3", pci.Healthy))
	mem = NewMemory() // reboot
	s := scan(bootB, t0.Add(time.Hour), fn("0000:3b:00.0", "", pci.NoRDMA))
	s.Enumerated, s.LostHold = true, 30*time.Second
	if sp, _, _ := JudgeFunctions(mem, exp, s); len(sp) != 1 || sp[0].Kind != event.KindFunctionFailed {
		t.Fatalf("first poll after the reboot with a 30 s hold: %+v", sp)
	}
}
