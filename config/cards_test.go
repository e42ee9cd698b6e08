package config

import (
	"strings"
	"testing"
	"time"
)

// TestLinkState_4_3_CardAnomalyHoldKey: cardAnomalyHold defaults to the
// seed's 30 s (state 3.1: INIT "problematic if stuck >30s"), at most the
// 60 s DESIGN.md difference 4 allows, and is validated.
func TestLinkState_4_3_CardAnomalyHoldKey(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want time.Duration
		bad  string
	}{
		{"", 30 * time.Second, ""},
		{`cardAnomalyHold = "0s"`, 0, ""},
		{`cardAnomalyHold = "90s"`, 90 * time.Second, ""},
		{`cardAnomalyHold = "-1s"`, 0, "outside"},
		{`cardAnomalyHold = "10m"`, 0, "outside"},
		{`cardAnomalyHold = 30`, 0, "duration"},
	} {
		c, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), "cardAnomalyHold") || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: %v, want a refusal naming cardAnomalyHold (%s)", tc.doc, err, tc.bad)
			}
			continue
		}
		if err != nil || c.CardAnomalyHold != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.doc, c, err, tc.want)
		}
	}
	if c, _ := Parse("x", nil); c.CardAnomalyHold > time.Minute {
		t.Fatalf("default hold %v is above DESIGN.md's 60 s", c.CardAnomalyHold)
	}
}
