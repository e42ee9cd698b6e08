package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// [mad] helper names the nichealth-mad both MAD readers run; [farEnd]
// helper, its spelling in earlier releases, still works and the daemon
// says once, across reloads, that it is an alias.
func TestMAD_HelperKeyAndItsAlias(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, conf string
		alias      bool
	}{
		{"mad", "[mad]\nhelper = %q\n", false},
		{"alias", "[farEnd]\nhelper = %q\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			helper := filepath.Join(t.TempDir(), "no-such-nichealth-mad")
			n := newNode(t, "dgx-h100", fmt.Sprintf(tc.conf, helper))
			n.start()
			n.waitLog("the far end read through the configured helper", func(s string) bool {
				return strings.Contains(s, "reading the far end") && strings.Contains(s, helper)
			})
			// A reload of the same file syncs the readers again (logged
			// once: later unchanged reloads are rate-limited).
			n.cmd.Process.Signal(syscall.SIGHUP)
			n.waitLog("the reload applied", func(s string) bool { return strings.Contains(s, "generation=2") })
			said := strings.Count(n.stderr.String(), "is an alias of [mad] helper")
			if tc.alias && said != 1 || !tc.alias && said != 0 {
				t.Fatalf("the alias said %d times with %s:\n%s", said, tc.conf, n.stderr.Tail())
			}
			n.stop()
		})
	}
}
