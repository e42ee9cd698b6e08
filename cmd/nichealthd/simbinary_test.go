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
