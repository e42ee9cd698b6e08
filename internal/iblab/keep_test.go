package iblab

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A kept lab outlives the handle that started it: detached, its
// processes are handed over by name; another handle attached to its
// directory drives its console (what perfquery then reads), and once
// ibsim is gone Attach says the lab is not running.
func TestLab_KeptDetachedAndAttached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	l, err := Start(Options{Fabric: TwoLeaves, SM: SMHost, Active: []string{GPUA017}, Keep: dir})
	Require(t, err)
	ps, err := l.Detach()
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	defer func() {
		for _, p := range ps {
			_ = syscall.Kill(p.PID, syscall.SIGTERM)
		}
	}()
	if len(ps) != 2 || ps[0].Name != "opensm" || ps[1].Name != "ibsim" {
		t.Fatalf("Detach handed over %+v, want opensm then ibsim", ps)
	}
	l.Close() // lets go of the console only
	for _, p := range ps {
		if err := syscall.Kill(p.PID, 0); err != nil {
			t.Fatalf("%s (pid %d) ended with the handle that started it: %v", p.Name, p.PID, err)
		}
	}

	a, err := Attach(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PerformanceSet(Leaf1, GPUA017Port, "PortCounters.SymbolErrorCounter", 77); err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(GPUA017, "perfquery", "-G", Leaf1GUID, "17")
	if err != nil {
		t.Fatal(err)
	}
	if m := perfSym.FindStringSubmatch(out); m == nil || m[1] != "77" {
		t.Fatalf("perfquery of leaf 1 port 17 after an attached PerformanceSet 77:\n%s", out)
	}
	a.Close()

	_ = syscall.Kill(ps[0].PID, syscall.SIGTERM)
	_ = syscall.Kill(ps[1].PID, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := Attach(dir)
		if err != nil && strings.Contains(err.Error(), "not running") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Attach after ibsim ended: %v, want \"not running\"", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
