package config

import (
	"errors"
	"fmt"
	"time"
)

// RulesFile is the [rules] table: the seeds' analyzer rules run on the
// node (DESIGN.md difference 8). Every key is optional; the defaults are
// the seeds' numbers.
type RulesFile struct {
	Flap struct {
		Enabled       *bool    `toml:"enabled"`
		Episodes      *int     `toml:"episodes"`
		Window        Duration `toml:"window"`
		Stabilization Duration `toml:"stabilization"`
	} `toml:"flap"`
	Drop struct {
		Enabled *bool    `toml:"enabled"`
		After   Duration `toml:"after"`
	} `toml:"drop"`
	Degradation struct {
		Enabled *bool    `toml:"enabled"`
		Events  *int     `toml:"events"`
		Window  Duration `toml:"window"`
	} `toml:"degradation"`
}

// rulesConfig applies the defaults of seed state 6.2 and 6.3 (and
// NVSentinel's RepeatedNICDegradation) to what the file sets, and names
// the first key that cannot work.
func rulesConfig(f RulesFile, bad func(key, format string, a ...any) error) (Rules, error) {
	c := DefaultRules()
	c.Flap.Enabled = boolOr(f.Flap.Enabled, true)
	setInt(&c.Flap.Episodes, f.Flap.Episodes)
	setDur(&c.Flap.Window, f.Flap.Window)
	setDur(&c.Flap.Stabilization, f.Flap.Stabilization)
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

// setInt sets dst when the key was written, zero included (the range
// check that follows refuses it).
func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

// setDur sets dst when the key was written, zero included: the range
// check that follows then refuses a zero the key cannot mean.
func setDur(dst *time.Duration, v Duration) {
	*dst = v.or(*dst)
}

// Rules tunes the three rules; each can be switched off.
type Rules struct {
	Flap        FlapRule
	Drop        DropRule
	Degradation DegradationRule
}

// FlapRule: Episodes link-down episodes within Window is flapping; the
// condition holds until no episode has been seen for Stabilization.
type FlapRule struct {
	Enabled       bool
	Episodes      int
	Window        time.Duration
	Stabilization time.Duration
}

// DropRule: a port DOWN for After with no link_downed change has dropped.
type DropRule struct {
	Enabled bool
	After   time.Duration
}

// DegradationRule: Events non-fatal degradation events on one port within
// Window are fatal.
type DegradationRule struct {
	Enabled bool
	Events  int
	Window  time.Duration
}

// DefaultRules are the seeds' numbers, every rule on: state 6.3 (3 link-down
// episodes in 10 minutes), state 6.2 (DOWN for 4 minutes), counter 1.4
// and 3.1 (RepeatedNICDegradation: 5 or more non-fatal events in 24 hours
// → fatal).
func DefaultRules() Rules {
	return Rules{
		Flap:        FlapRule{Enabled: true, Episodes: 3, Window: 10 * time.Minute, Stabilization: 30 * time.Minute},
		Drop:        DropRule{Enabled: true, After: 4 * time.Minute},
		Degradation: DegradationRule{Enabled: true, Events: 5, Window: 24 * time.Hour},
	}
}

// Validate names the first setting that cannot work.
func (c Rules) Validate() error {
	var errs []error
	if c.Flap.Episodes < 1 {
		errs = append(errs, fmt.Errorf("flap episodes %d: must be at least 1", c.Flap.Episodes))
	}
	if c.Flap.Window <= 0 {
		errs = append(errs, fmt.Errorf("flap window %s: must be positive", c.Flap.Window))
	}
	if c.Flap.Stabilization < 0 {
		errs = append(errs, fmt.Errorf("flap stabilization %s: must not be negative", c.Flap.Stabilization))
	}
	if c.Drop.After <= 0 {
		errs = append(errs, fmt.Errorf("drop after %s: must be positive", c.Drop.After))
	}
	if c.Degradation.Events < 1 {
		errs = append(errs, fmt.Errorf("degradation events %d: must be at least 1", c.Degradation.Events))
	}
	if c.Degradation.Window <= 0 {
		errs = append(errs, fmt.Errorf("degradation window %s: must be positive", c.Degradation.Window))
	}
	return errors.Join(errs...)
}
