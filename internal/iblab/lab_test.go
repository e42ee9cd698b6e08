package iblab

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

var perfSym = regexp.MustCompile(`SymbolErrorCounter:\.+(\d+)`)

// The lab is what its tests rely on: ports come up ACTIVE under a real
// opensm, a counter set on the console is what perfquery reads, a killed
// client's slot is freed with X, a cable pulled and put back comes back
// ACTIVE, and the fabric freezes and thaws.
func TestLab_TwoLeaves(t *testing.T) {
	l, err := Start(Options{Fabric: TwoLeaves, SM: SMHost, Active: []string{GPUA017, GPUA018}})
	Require(t, err)
	defer l.Close()

	if err := l.PerformanceSet(Leaf1, GPUA017Port, "PortCounters.SymbolErrorCounter", 55); err != nil {
		t.Fatal(err)
	}
	// The leaf's LID, from the node under test's own view of its SM-assigned
	// neighbour: smpquery by directed route.
	out, err := l.Run(GPUA017, "smpquery", "-D", "portinfo", "0,1", "0")
	if err != nil {
		t.Fatal(err)
	}
	lid := regexp.MustCompile(`(?m)^Lid:\.+(\d+)$`).FindStringSubmatch(out)
	if lid == nil || lid[1] == "0" {
		t.Fatalf("leaf 1 has no LID:\n%s", out)
	}
	out, err = l.Run(GPUA017, "perfquery", lid[1], "17")
	if err != nil {
		t.Fatal(err)
	}
	if m := perfSym.FindStringSubmatch(out); m == nil || m[1] != "55" {
		t.Fatalf("perfquery of leaf 1 port 17 after PerformanceSet 55:\n%s", out)
	}

	// A client killed without saying goodbye keeps its slot until X.
	srv := exec.Command("ibsysstat", "-S")
	srv.Dir, srv.Env = l.Dir, l.Env(GPUA018)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitAttached := func(pid int, want bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			cs, err := l.Attached()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, c := range cs {
				found = found || c.PID == pid && c.Node == GPUA018
			}
			if found == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("client %d attached = %v, want %v: %+v", pid, found, want, cs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAttached(srv.Process.Pid, true)
	_ = srv.Process.Kill()
	_ = srv.Wait()
	waitAttached(srv.Process.Pid, true)
	if err := l.Free(srv.Process.Pid); err != nil {
		t.Fatal(err)
	}
	waitAttached(srv.Process.Pid, false)

	if err := l.Unlink(GPUA017, 1); err != nil {
		t.Fatal(err)
	}
	out, _ = l.Run(GPUA017, "ibstat")
	if stateActive.MatchString(out) {
		t.Fatalf("unlinked port still ACTIVE:\n%s", out)
	}
	if err := l.ReLink(GPUA017, 1); err != nil {
		t.Fatal(err)
	}
	// Back ACTIVE once opensm's next sweep (every second) sees it.
	if err := l.WaitActive(GPUA017, time.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}

	if err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := l.Cont(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Console("# thawed"); err != nil {
		t.Fatal(err)
	}
	dir := l.Dir
	l.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("lab directory %s left behind: %v", dir, err)
	}
}

// The real 100-node cluster comes up under opensm, and a discovery by
// directed route from one of its hosts finds all of it.
func TestLab_X5(t *testing.T) {
	l, err := Start(Options{Fabric: X5, SM: "H-0002c90300048288", Active: []string{"H-78e7d10300229794"}})
	Require(t, err)
	defer l.Close()
	out, err := l.Run("H-78e7d10300229794", "ibnetdiscover")
	if err != nil {
		t.Fatalf("ibnetdiscover: %v\n%s", err, out)
	}
	sw := regexp.MustCompile(`(?m)^Switch\s`).FindAllString(out, -1)
	ca := regexp.MustCompile(`(?m)^Ca\s`).FindAllString(out, -1)
	if len(sw) != 11 || len(ca) != 89 {
		t.Fatalf("ibnetdiscover found %d switches and %d CAs, want 11 and 89", len(sw), len(ca))
	}
}

// Without the lab's programs Start says which package to install.
func TestLab_MissingToolNamesItsPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(Options{Fabric: TwoLeaves, SM: SMHost})
	var me *MissingError
	if !errors.As(err, &me) || !strings.Contains(me.What, "apt-get install") {
		t.Fatalf("err %v", err)
	}
}
