package flagdoc

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// Duration defines a duration flag on fs whose bad values are explained
// with the fix: "--timeout 5: a duration needs a unit, e.g. 5s", where the
// flag package says only "parse error".
func Duration(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	d := def
	fs.Var(&durationValue{d: &d, name: name}, name, usage)
	return &d
}

type durationValue struct {
	d    *time.Duration
	name string
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err == nil {
		*v.d = d
		return nil
	}
	if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
		return fmt.Errorf("--%s %s: a duration needs a unit, e.g. %ss", v.name, s, s)
	}
	return fmt.Errorf("--%s %s: not a duration; write a number and a unit, e.g. 30s, 5m or 1h30m", v.name, s)
}

func (v *durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v *durationValue) Get() any { return *v.d }

// Type names the value in PrintOptions, as flag.Duration's is named.
func (v *durationValue) Type() string { return "duration" }
