package counters

import (
	"os"

	"github.com/nichealth/nichealthd/config/countertable"
)

// PlanFor returns the enabled definitions, in order: the daemon builds its
// read plan from them only, so a disabled counter's file is never opened
// or read (seed 7.1: disabling is how an operator silences a counter a
// device does not have). Per port, the daemon further keeps only the
// definitions that AppliesTo the port's link layer.
func PlanFor(defs []countertable.Definition) []countertable.Definition {
	out := make([]countertable.Definition, 0, len(defs))
	for _, d := range defs {
		if d.Enabled {
			out = append(out, d)
		}
	}
	return out
}

// FileGroup is one file to read per poll and the definitions (indexes into
// the slice given to Files) that evaluate its value.
type FileGroup struct {
	Path string
	Defs []int
}

// Files groups definitions that read the same file, so that the file is
// read once per poll and every definition sees the same value at the same
// instant: symbol_error and symbol_error_fatal both read
// counters/symbol_error (seed 5.2). Groups keep the order of first
// appearance.
func Files(defs []countertable.Definition) []FileGroup {
	out := make([]FileGroup, 0, len(defs))
	at := make(map[string]int, len(defs))
	for i, d := range defs {
		if g, ok := at[d.Path]; ok {
			out[g].Defs = append(out[g].Defs, i)
			continue
		}
		at[d.Path] = len(out)
		out = append(out, FileGroup{Path: d.Path, Defs: []int{i}})
	}
	return out
}

// Availability sorts the enabled counters of one port into those whose file
// exists and those whose file does not. The daemon logs the result once per
// device at start and when a device appears, and never again while polling
// (seed 7.1: missing counters fail open and are not re-logged). A netdev
// counter of a port without a netdev (iface == "") counts as missing.
// Disabled definitions and driver statistics are left out of both lists.
func Availability(portDir, netClassDir, iface string, defs []countertable.Definition) (present, missing []string) {
	for i := range defs {
		d := &defs[i]
		if !d.Enabled || d.IsEthtool() {
			// Driver statistics are not files: the daemon asks the driver
			// for its names when it builds the plan (see daemon/phy.go).
			continue
		}
		f := d.File(portDir, netClassDir, iface)
		if f == "" {
			missing = append(missing, d.Name)
			continue
		}
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, d.Name)
			continue
		}
		present = append(present, d.Name)
	}
	return present, missing
}
