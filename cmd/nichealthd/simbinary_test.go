package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	simOnce sync.Once
	simPath string
	simErr  error

	seamOnce sync.Once
	seamPath string
	seamErr  error
)

// simBinary builds nichealth-sim once, next to the daemon under test: the
// test injects faults the way an operator trying the daemon out does.
func simBinary(t *testing.T) string {
	t.Helper()
	simOnce.Do(func() {
		simPath = filepath.Join(filepath.Dir(daemonBin), "nichealth-sim")
		out, err := exec.Command("go", "build", "-o", simPath, "../nichealth-sim").CombinedOutput()
		if err != nil {
			simErr = fmt.Errorf("build nichealth-sim: %v\n%s", err, out)
		}
	})
	if simErr != nil {
		t.Fatal(simErr)
	}
	return simPath
}

// simulatedDaemon builds, once, nichealthd with the simulate tag: the
// binary for the tests that need the simulator to stand in for the kernel
// (an errno on a chosen file, mlx5 driver statistics), given the host by
// --simulate-root. Every other black-box test runs daemonBin, the
// production build, which has no such seam.
func simulatedDaemon(t *testing.T) string {
	t.Helper()
	seamOnce.Do(func() {
		seamPath = filepath.Join(filepath.Dir(daemonBin), "nichealthd-simulate")
		out, err := exec.Command("go", "build", "-race", "-tags", "simulate", "-o", seamPath, ".").CombinedOutput()
		if err != nil {
			seamErr = fmt.Errorf("build nichealthd -tags simulate: %v\n%s", err, out)
		}
	})
	if seamErr != nil {
		t.Fatal(seamErr)
	}
	return seamPath
}

// simulate makes the node run the simulate build with its host as the
// simulated root.
func (n *node) simulate() {
	n.t.Helper()
	n.bin = simulatedDaemon(n.t)
	n.seamArgs = []string{"--simulate-root", n.h.Root}
}
