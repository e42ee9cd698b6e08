// Package sample is a test stream for testsummary's own test: one test of
// each outcome, and subtests.
package sample

import (
	"os"
	"testing"
)

func TestPasses(t *testing.T) {}

func TestSkipsWithReason(t *testing.T) {
	t.Skip("dbus-daemon not installed (apt-get install dbus)")
}

func TestFailsWhenAsked(t *testing.T) {
	if os.Getenv("SAMPLE_FAIL") != "" {
		t.Log("measured 3 widgets") // logged first: the summary's why names the failure, not this
		t.Fatal("asked to fail")
	}
}

func TestParent(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two", func(t *testing.T) { t.Skip("not on this machine") })
}

// TestHelperProcess is the body of a child process, as in os/exec's tests:
// alone it skips, and the summary counts it nowhere.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("SAMPLE_CHILD") == "" {
		t.Skip("child-process body; runs only when re-executed by another test")
	}
}
