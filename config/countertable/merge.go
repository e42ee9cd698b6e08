package countertable

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/nichealth/nichealthd/internal/spelling"
	"github.com/nichealth/nichealthd/observe"
)

// Override is one [[counterDetection.counters]] entry of the TOML file. Nil
// fields keep the default; the keys are NVSentinel's, so its configuration
// can be pasted unchanged.
type Override struct {
	Name          *string  `toml:"name"`
	Path          *string  `toml:"path"`
	Enabled       *bool    `toml:"enabled"`
	IsFatal       *bool    `toml:"isFatal"`
	ThresholdType *string  `toml:"thresholdType"`
	Threshold     *float64 `toml:"threshold"`
	VelocityUnit  *string  `toml:"velocityUnit"`
	Description   *string  `toml:"description"`
}

// ValidationError is one rejected configuration entry. Index is the entry's
// position in counterDetection.counters (-1 when the problem is not tied to
// one entry).
type ValidationError struct {
	Index   int
	Counter string
	Key     string
	Reason  string
}

func (e *ValidationError) Error() string {
	where := "counterDetection.counters"
	if e.Index >= 0 {
		where = fmt.Sprintf("counterDetection.counters[%d]", e.Index)
	}
	if e.Counter != "" {
		where += fmt.Sprintf(" (name %q)", e.Counter)
	}
	if e.Key == "" {
		return where + ": " + e.Reason
	}
	return where + ": " + e.Key + " " + e.Reason
}

// seedStatisticsCarrier is the seed's carrier_changes path, which no Linux
// kernel provides; carrierChangesPath is where the kernel really puts it.
const (
	seedStatisticsCarrier = observe.NetClassPrefix + observe.InterfacePlaceholder + "/statistics/carrier_changes"
	carrierChangesPath    = observe.NetClassPrefix + observe.InterfacePlaceholder + "/carrier_changes"
)

// Merge applies overrides to defaults (seed sections 10.3 and 10.5):
//   - an entry whose name is a default changes only the keys it sets;
//     enabled = false turns that counter off;
//   - an entry with a new name adds a custom counter, which must set path,
//     thresholdType and threshold (and velocityUnit for velocity);
//   - every resulting definition is validated: threshold finite and >= 0,
//     thresholdType delta or velocity, velocityUnit second, minute or hour,
//     names unique and made of letters, digits, '_', '-', '.', and a path
//     that stays inside the port directory (see validPath).
//
// The result keeps the defaults' order, then the custom counters in file
// order. Any problem rejects the whole configuration: the error is one
// *ValidationError or several joined with errors.Join, each naming the
// entry, the key and the reason.
//
// One path is rewritten rather than rejected: the seed's
// /sys/class/net/{interface}/statistics/carrier_changes does not exist in
// Linux (DESIGN.md difference 1), and a configuration copied from the seed
// would otherwise watch nothing without a word; it is read from
// /sys/class/net/{interface}/carrier_changes instead.
func Merge(defaults []Definition, overrides []Override) ([]Definition, error) {
	out := make([]Definition, len(defaults))
	copy(out, defaults)
	byName := make(map[string]int, len(out))
	for i, d := range out {
		byName[d.Name] = i
	}
	// origin remembers which override produced or last touched each
	// definition, so a validation error points at the right entry.
	origin := make([]int, len(out))
	for i := range origin {
		origin[i] = -1
	}
	var errs []error
	seen := make(map[string]int, len(overrides))
	for i, o := range overrides {
		name, err := overrideName(o, i, seen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		idx, known := byName[name]
		if !known && o.Path == nil {
			// A counter without a path can only be one of the defaults:
			// a name close to one is a typo of it, and "path is required"
			// would send the operator the wrong way.
			if near := spelling.Nearest(name, defaultNames(defaults)); near != "" {
				errs = append(errs, &ValidationError{Index: i, Counter: name, Key: "name",
					Reason: fmt.Sprintf("is an unknown counter: did you mean %s? (a new counter must set path, thresholdType and threshold)", near)})
				continue
			}
		}
		if !known {
			if missing := missingForNew(o, i, name); len(missing) > 0 {
				errs = append(errs, missing...)
				continue
			}
			out = append(out, Definition{Name: name, Enabled: true})
			origin = append(origin, i)
			idx = len(out) - 1
			byName[name] = idx
		}
		origin[idx] = i
		o.applyTo(&out[idx])
	}
	for i := range out {
		errs = append(errs, validate(&out[i], origin[i])...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func defaultNames(defs []Definition) []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return names
}

// overrideName checks an override's name: present, not repeated, usable.
func overrideName(o Override, i int, seen map[string]int) (string, error) {
	if o.Name == nil || strings.TrimSpace(*o.Name) == "" {
		return "", &ValidationError{Index: i, Key: "name", Reason: "is required"}
	}
	name := *o.Name
	if first, dup := seen[name]; dup {
		return "", &ValidationError{Index: i, Counter: name, Key: "name",
			Reason: fmt.Sprintf("duplicates counterDetection.counters[%d]; each counter may appear once", first)}
	}
	seen[name] = i
	if r := nameProblem(name); r != "" {
		return "", &ValidationError{Index: i, Counter: name, Key: "name", Reason: r}
	}
	return name, nil
}

// missingForNew lists the keys a custom counter (not one of the defaults)
// must set.
func missingForNew(o Override, i int, name string) []error {
	var missing []string
	if o.Path == nil {
		missing = append(missing, "path")
	}
	if o.ThresholdType == nil {
		missing = append(missing, "thresholdType")
	}
	if o.Threshold == nil {
		missing = append(missing, "threshold")
	}
	if o.ThresholdType != nil && (*o.ThresholdType == TypeVelocity || *o.ThresholdType == TypeBER || *o.ThresholdType == TypeCongestion) && o.VelocityUnit == nil {
		missing = append(missing, "velocityUnit")
	}
	var errs []error
	for _, k := range missing {
		errs = append(errs, &ValidationError{Index: i, Counter: name, Key: k,
			Reason: "is required for a counter that is not one of the defaults"})
	}
	return errs
}

// applyTo sets the keys the override names.
func (o Override) applyTo(d *Definition) {
	if o.Path != nil {
		d.Path = *o.Path
		if d.Path == seedStatisticsCarrier {
			d.Path = carrierChangesPath
		}
	}
	if o.Enabled != nil {
		d.Enabled = *o.Enabled
	}
	if o.IsFatal != nil {
		d.IsFatal = *o.IsFatal
	}
	if o.ThresholdType != nil {
		d.ThresholdType = *o.ThresholdType
	}
	if o.Threshold != nil {
		d.Threshold = *o.Threshold
	}
	if o.VelocityUnit != nil {
		d.VelocityUnit = *o.VelocityUnit
	}
	if o.Description != nil {
		d.Description = *o.Description
	}
}

// Validate checks definitions that did not come through Merge (for
// example, built in code) by the same rules.
func Validate(defs []Definition) error {
	var errs []error
	seen := make(map[string]bool, len(defs))
	for i := range defs {
		if seen[defs[i].Name] {
			errs = append(errs, &ValidationError{Index: i, Counter: defs[i].Name, Key: "name",
				Reason: "is used by more than one counter"})
		}
		seen[defs[i].Name] = true
		if r := nameProblem(defs[i].Name); r != "" {
			errs = append(errs, &ValidationError{Index: i, Counter: defs[i].Name, Key: "name", Reason: r})
		}
		errs = append(errs, validate(&defs[i], i)...)
	}
	return errors.Join(errs...)
}

func validate(d *Definition, idx int) []error {
	var errs []error
	bad := func(key, reason string) {
		errs = append(errs, &ValidationError{Index: idx, Counter: d.Name, Key: key, Reason: reason})
	}
	switch d.ThresholdType {
	case TypeDelta, TypeVelocity, TypeBER, TypeCongestion:
	default:
		bad("thresholdType", fmt.Sprintf("%q is not one of delta, velocity, ber, congestion", d.ThresholdType))
	}
	if r := berProblem(d); r != "" {
		bad("threshold", r)
	}
	if r := congestionProblem(d); r != "" {
		bad("thresholdType", r)
	}
	if math.IsNaN(d.Threshold) || math.IsInf(d.Threshold, 0) {
		bad("threshold", fmt.Sprintf("%v is not a finite number", d.Threshold))
	} else if d.Threshold < 0 {
		bad("threshold", fmt.Sprintf("%v is negative; it must be >= 0", d.Threshold))
	}
	if _, ok := UnitDuration(d.VelocityUnit); !ok {
		switch {
		case d.Windowed() && d.VelocityUnit == "":
			bad("velocityUnit", "is required for a velocity threshold (second, minute or hour) and for a ber or congestion threshold, as its window")
		case d.VelocityUnit != "":
			// A typo is rejected even on a delta counter, where the unit
			// is unused, because the operator evidently meant something.
			bad("velocityUnit", fmt.Sprintf("%q is not one of second, minute, hour", d.VelocityUnit))
		}
	}
	if r := pathProblem(d.Path); r != "" {
		bad("path", fmt.Sprintf("%q %s", d.Path, r))
	}
	return errs
}

// nameProblem restricts names to characters that are safe in state keys
// ("<device>:<port>:<name>"), journal fields and D-Bus strings.
func nameProblem(name string) string {
	if name == "" {
		return "is empty"
	}
	if len(name) > 128 {
		return "is longer than 128 characters"
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Sprintf("%q may contain only letters, digits, '_', '-' and '.'", name)
		}
	}
	return ""
}

// pathProblem keeps every counter file inside the port's directory or the
// port's network interface, so a configuration cannot make the daemon read
// (and report) arbitrary files. It returns "" for a good path.
func pathProblem(p string) string {
	if p == "" {
		return "is empty"
	}
	if stat, ok := strings.CutPrefix(p, observe.EthtoolPrefix); ok {
		return ethtoolStatProblem(stat)
	}
	if strings.Contains(p, observe.InterfacePlaceholder) || strings.HasPrefix(p, "/") {
		rest, ok := strings.CutPrefix(p, observe.NetClassPrefix+observe.InterfacePlaceholder+"/")
		if !ok {
			return "must be relative to the port directory (counters/<file>, hw_counters/<file>) " +
				"or be /sys/class/net/{interface}/<file>, /sys/class/net/{interface}/statistics/<file> or ethtool:<statistic>"
		}
		rest = strings.TrimPrefix(rest, "statistics/")
		if !simpleFile(rest) {
			return "must name one file directly under /sys/class/net/{interface}/ or its statistics/ directory"
		}
		return ""
	}
	if p == "." || !filepath.IsLocal(p) || filepath.Clean(p) != p || strings.ContainsAny(p, "{}\\") {
		return "must be a clean relative path inside the port directory, without '..', e.g. counters/symbol_error"
	}
	return ""
}

func simpleFile(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/{}\\")
}
