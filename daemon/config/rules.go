package config

import (
	"time"

	"github.com/nichealth/nichealthd/checks/rules"
)

// RulesFile is the [rules] table: the seeds' analyzer rules run on the
// node (DESIGN.md difference 8). Every key is optional; the defaults are
// the seeds' numbers.
type RulesFile struct {
	Flap struct {
		Enabled       *bool    `toml:"enabled"`
		Episodes      int      `toml:"episodes"`
		Window        Duration `toml:"window"`
		Stabilization Duration `toml:"stabilization"`
	} `toml:"flap"`
	Drop struct {
		Enabled *bool    `toml:"enabled"`
		After   Duration `toml:"after"`
	} `toml:"drop"`
	Degradation struct {
		Enabled *bool    `toml:"enabled"`
		Events  int      `toml:"events"`
		Window  Duration `toml:"window"`
	} `toml:"degradation"`
}

// rulesConfig applies the defaults of seed state 6.2 and 6.3 (and
// NVSentinel's RepeatedNICDegradation) to what the file sets, and names
// the first key that cannot work.
func rulesConfig(f RulesFile, bad func(key, format string, a ...any) error) (rules.Config, error) {
	c := rules.Defaults()
	c.Flap.Enabled = boolOr(f.Flap.Enabled, true)
	setInt(&c.Flap.Episodes, f.Flap.Episodes)
	setDur(&c.Flap.Window, f.Flap.Window)
	if f.Flap.Stabilization.Duration != 0 {
		c.Flap.Stabilization = f.Flap.Stabilization.Duration
	}
	c.Drop.Enabled = boolOr(f.Drop.Enabled, true)
	setDur(&c.Drop.After, f.Drop.After)
	c.Degradation.Enabled = boolOr(f.Degradation.Enabled, true)
	setInt(&c.Degradation.Events, f.Degradation.Events)
	setDur(&c.Degradation.Window, f.Degradation.Window)
	for _, chk := range []struct {
		key string
		ok  bool
		why string
	}{
		{"rules.flap.episodes", c.Flap.Episodes >= 1 && c.Flap.Episodes <= 1000, "must be 1..1000 (link-down episodes within rules.flap.window)"},
		{"rules.flap.window", c.Flap.Window >= time.Second && c.Flap.Window <= 24*time.Hour, "must be 1s..24h"},
		{"rules.flap.stabilization", c.Flap.Stabilization >= 0 && c.Flap.Stabilization <= 7*24*time.Hour, "must be 0..168h"},
		{"rules.drop.after", c.Drop.After >= time.Second && c.Drop.After <= 24*time.Hour, "must be 1s..24h"},
		{"rules.degradation.events", c.Degradation.Events >= 1 && c.Degradation.Events <= 1000, "must be 1..1000"},
		{"rules.degradation.window", c.Degradation.Window >= time.Second && c.Degradation.Window <= 7*24*time.Hour, "must be 1s..168h"},
	} {
		if !chk.ok {
			return c, bad(chk.key, "%s", chk.why)
		}
	}
	return c, c.Validate()
}

func setInt(dst *int, v int) {
	if v != 0 {
		*dst = v
	}
}

func setDur(dst *time.Duration, v Duration) {
	if v.Duration != 0 {
		*dst = v.Duration
	}
}
