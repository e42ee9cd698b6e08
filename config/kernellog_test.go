package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"
	"github.com/nichealth/nichealthd/event"
)

func TestKernelLog_11_ConfigDefaults(t *testing.T) {
	c, err := Parse("f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.KernelLog.Enabled || c.KernelLog.MatchUserSpace || len(c.KernelLog.Patterns) != len(patterntable.Defaults()) || !c.Checks[event.KernelLogCheck] {
		t.Fatalf("kernelLog defaults %+v", c.KernelLog)
	}
}

func TestKernelLog_11_ConfigOverridesAddsAndDisables(t *testing.T) {
	c, err := Parse("f", []byte(`
[kernelLog]
matchUserSpace = true

[[kernelLog.patterns]]
name = "access_reg_failed"
enabled = false

[[kernelLog.patterns]]
name = "tx_timeout"
severity = "fatal"
recommendedAction = "COMPONENT_RESET"
dedupeWindow = "1m"
occurrences = 3
window = "10m"

[[kernelLog.patterns]]
name = "ib_core_gid_error"
regex = '^infiniband (?P<dev>mlx5_\d+): .*GID table'
severity = "non-fatal"
description = "the GID table could not be updated. Fix: restart the RoCE netdev"
quietPeriod = "30m"
`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]patterntable.Pattern{}
	for _, p := range c.KernelLog.Patterns {
		by[p.Name] = p
	}
	tx := by["tx_timeout"]
	if !c.KernelLog.MatchUserSpace || by["access_reg_failed"].Enabled || tx.Severity != patterntable.Fatal || tx.Dedupe != time.Minute ||
		tx.Occurrences != 3 || tx.Window != 10*time.Minute || by["ib_core_gid_error"].Quiet != 30*time.Minute {
		t.Fatalf("patterns %+v", c.KernelLog.Patterns)
	}
}

// A pattern that cannot work is refused with the file, the key (with the
// entry's index) and the line of that entry's key.
func TestKernelLog_11_ConfigRefusalNamesFileKeyLine(t *testing.T) {
	for _, tc := range []struct {
		doc, key string
		line     int
		reason   string
	}{
		{`
[[kernelLog.patterns]]
name = "tx_timeout"
enabled = false

[[kernelLog.patterns]]
name = "mine"
severity = "fatal"
regex = "mlx5_core ("
`, "kernelLog.patterns[1].regex", 9, "does not compile"},
		{`
[[kernelLog.patterns]]
name = "mine"
regex = "x"
severity = "catastrophic"
`, "kernelLog.patterns[0].severity", 5, "catastrophic"},
		{`
[[kernelLog.patterns]]
name = "link_downed"
regex = "x"
severity = "fatal"
`, "kernelLog.patterns[0].name", 3, "also a counter's name"},
	} {
		_, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
		var ce *Error
		if !errors.As(err, &ce) || ce.File != "/etc/nichealthd/config.toml" || ce.Key != tc.key || ce.Line != tc.line || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%v (%#v), want key %s line %d containing %q", err, ce, tc.key, tc.line, tc.reason)
		}
	}
	// A duration written as a number is refused with its line by the
	// decoder.
	_, err := Parse("f", []byte("[[kernelLog.patterns]]\nname = \"tx_timeout\"\ndedupeWindow = 5\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("numeric duration: %v", err)
	}
}
