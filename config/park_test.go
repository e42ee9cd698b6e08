package config

import (
	"strings"
	"testing"
	"time"
)

func TestParking_ReprobeIntervalKey(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want time.Duration
		bad  string
	}{
		{"", 10 * time.Minute, ""},
		{`parkReprobeInterval = "250ms"`, 250 * time.Millisecond, ""},
		{`parkReprobeInterval = "1h"`, time.Hour, ""},
		{`parkReprobeInterval = "1ms"`, 0, "outside"},
		{`parkReprobeInterval = "48h"`, 0, "outside"},
		{`parkReprobeInterval = 600`, 0, "duration"},
	} {
		c, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), "parkReprobeInterval") || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: %v, want a refusal naming parkReprobeInterval (%s)", tc.doc, err, tc.bad)
			}
			continue
		}
		if err != nil || c.ParkReprobe != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.doc, c, err, tc.want)
		}
	}
}
