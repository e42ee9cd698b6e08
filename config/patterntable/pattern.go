package patterntable

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// Severity of a pattern's condition.
type Severity string

const (
	Fatal    Severity = "fatal"
	NonFatal Severity = "non-fatal"
	// Informational patterns raise nothing: they claim records (a
	// recovery, a cable plugged in) so that a later, broader pattern does
	// not, and they are counted on /metrics.
	Informational Severity = "informational"
)

// Scope says where a pattern's condition goes.
type Scope string

const (
	// ScopeNIC: on the ports of the monitored NIC the record names; a
	// record about any other function, or naming none, is counted and
	// logged at debug, not raised.
	ScopeNIC Scope = "nic"
	// ScopeNICOrNode: as ScopeNIC, but a record naming no function, or a
	// function discovery does not know at all (it failed to probe, so it
	// has no RDMA device), raises a node-level condition.
	ScopeNICOrNode Scope = "nic-or-node"
	// ScopeNode: always a node-level condition (the record names no NIC).
	ScopeNode Scope = "node"
)

// Pattern is one row of the table.
type Pattern struct {
	Name string
	// Regex is matched against the record's message (RE2 syntax). A named
	// group "pci" (a PCI address) or "dev" (a netdev or RDMA device name)
	// names the function when the record's dictionary and prefix do not.
	Regex string
	// FollowedBy, when set, makes a two-record pattern: Regex arms it and
	// a record matching FollowedBy within the next FollowWithin records
	// is the occurrence (a soft lockup whose stack trace runs through the
	// mlx5 NAPI poll).
	FollowedBy   string
	FollowWithin int
	// ClearRegex, when set, clears the pattern's condition on the same
	// function when a record matches it (a cable plugged back in).
	ClearRegex  string
	Severity    Severity
	Action      event.RecommendedAction
	Description string
	// Dedupe is the de-duplication window: one event per window, however
	// many records; the condition's count says how many.
	Dedupe time.Duration
	// Occurrences within Window are needed before the condition is
	// raised (1: the first record raises it).
	Occurrences int
	Window      time.Duration
	// Quiet is how long a non-fatal condition stays without a new record
	// before it clears. Fatal conditions latch.
	Quiet   time.Duration
	Scope   Scope
	Enabled bool
	// Source says where the wording comes from (kernel file or public
	// report).
	Source string
}

// Override is one [[kernelLog.patterns]] entry: a name that is a default
// changes only the keys it sets (enabled = false turns it off); a new
// name adds a pattern.
type Override struct {
	Name              *string  `toml:"name"`
	Enabled           *bool    `toml:"enabled"`
	Regex             *string  `toml:"regex"`
	FollowedBy        *string  `toml:"followedBy"`
	FollowWithin      *int     `toml:"followWithin"`
	ClearRegex        *string  `toml:"clearRegex"`
	Severity          *string  `toml:"severity"`
	RecommendedAction *string  `toml:"recommendedAction"`
	Description       *string  `toml:"description"`
	DedupeWindow      Duration `toml:"dedupeWindow"`
	Occurrences       *int     `toml:"occurrences"`
	Window            Duration `toml:"window"`
	QuietPeriod       Duration `toml:"quietPeriod"`
	Scope             *string  `toml:"scope"`
}

// Duration is a duration written as "5m" in TOML; Set says it was given.
type Duration struct {
	D   time.Duration
	Set bool
}

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like \"5m\" or \"24h\"", b)
	}
	d.D, d.Set = v, true
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.D.String()), nil }

// ValidationError is one refused entry: Index is its position in
// kernelLog.patterns (-1 for a default), Key the offending key.
type ValidationError struct {
	Index  int
	Name   string
	Key    string
	Reason string
}

func (e *ValidationError) Error() string {
	where := "kernelLog.patterns"
	if e.Index >= 0 {
		where = fmt.Sprintf("kernelLog.patterns[%d]", e.Index)
	}
	if e.Name != "" {
		where += fmt.Sprintf(" (name %q)", e.Name)
	}
	if e.Key == "" {
		return where + ": " + e.Reason
	}
	return where + ": " + e.Key + ": " + e.Reason
}

// Words AcknowledgeReset takes instead of a counter name; no pattern may
// be called so.
var reservedNames = []string{AckAll, Overflow, "pcie_aer"}

// Overflow is the name of the kernel-log condition that counts the
// records past the check's bounds on conditions.
const Overflow = "kernel_log_overflow"

// AckAll is the counter name of AcknowledgeReset that clears every
// kernel-log condition on the port.
const AckAll = "kernel_log"

// The table's cost budget: every record is tried against every enabled
// pattern, so the count and the regexes' total size bound what judging
// one record can cost (500 patterns once stalled the poll loop for 40 s on
// 3,000 records). The judging itself also runs within a per-cycle work
// budget (checks/kernellog), so even a table within these bounds cannot
// lengthen a cycle; these keep it from falling ever further behind.
const (
	// MaxPatterns bounds the patterns, built-in and added.
	MaxPatterns = 128
	// MaxTableBytes bounds the total length of the enabled patterns'
	// regex, followedBy and clearRegex.
	MaxTableBytes = 32 << 10
)

// Bounds of what a pattern may say.
const (
	maxRegex       = 1024
	maxDescription = 2000
	// MaxOccurrences bounds a pattern's occurrences and followWithin, and
	// the occurrences a condition remembers.
	MaxOccurrences = 10000
	maxWindow      = 7 * 24 * time.Hour
)

// Merge applies overrides to defaults. The result keeps the defaults'
// order, then the added patterns in file order: a record is judged by the
// first enabled pattern it matches. The first problem found is returned
// as a *ValidationError.
func Merge(defaults []Pattern, overrides []Override) ([]Pattern, error) {
	out := append([]Pattern(nil), defaults...)
	origin := make([]int, len(out))
	for i := range origin {
		origin[i] = -1
	}
	byName := map[string]int{}
	for i, p := range out {
		byName[p.Name] = i
	}
	seen := map[string]bool{}
	for i, o := range overrides {
		if o.Name == nil || strings.TrimSpace(*o.Name) == "" {
			return nil, &ValidationError{Index: i, Key: "name", Reason: "missing: every entry names the pattern it changes or adds"}
		}
		name := *o.Name
		if seen[name] {
			return nil, &ValidationError{Index: i, Name: name, Key: "name", Reason: "appears twice; merge the two entries"}
		}
		seen[name] = true
		j, known := byName[name]
		if !known {
			if o.Regex == nil || o.Severity == nil {
				return nil, &ValidationError{Index: i, Name: name, Key: "regex", Reason: "a new pattern needs regex and severity (a name that is not a default adds a pattern; see nichealthd.toml(5) for the default names)"}
			}
			out = append(out, Pattern{Name: name, Enabled: true, Action: event.ActionNone, Dedupe: 5 * time.Minute,
				Occurrences: 1, Quiet: time.Hour, Scope: ScopeNIC, Source: "configuration"})
			origin = append(origin, i)
			j = len(out) - 1
			byName[name] = j
		}
		origin[j] = i
		if err := o.applyTo(&out[j]); err != nil {
			err.Index, err.Name = i, name
			return nil, err
		}
	}
	for i := range out {
		if err := validate(&out[i]); err != nil {
			err.Index, err.Name = origin[i], out[i].Name
			return nil, err
		}
	}
	if len(out) > MaxPatterns {
		return nil, &ValidationError{Index: origin[MaxPatterns], Name: out[MaxPatterns].Name, Key: "name",
			Reason: fmt.Sprintf("more than %d patterns (%d built in): every record is tried against each on the poll loop; join patterns into one regex with |, or disable (enabled = false) the ones not needed", MaxPatterns, len(defaults))}
	}
	size := 0
	for i := range out {
		if !out[i].Enabled {
			continue
		}
		if size += len(out[i].Regex) + len(out[i].FollowedBy) + len(out[i].ClearRegex); size > MaxTableBytes {
			return nil, &ValidationError{Index: origin[i], Name: out[i].Name, Key: "regex",
				Reason: fmt.Sprintf("the enabled patterns' regexes add up to more than %d bytes here: every record is tried against each on the poll loop; shorten them or disable (enabled = false) the ones not needed", MaxTableBytes)}
		}
	}
	return out, nil
}

func (o *Override) applyTo(p *Pattern) *ValidationError {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Regex, o.Regex)
	set(&p.FollowedBy, o.FollowedBy)
	set(&p.ClearRegex, o.ClearRegex)
	set(&p.Description, o.Description)
	if o.Enabled != nil {
		p.Enabled = *o.Enabled
	}
	if o.FollowWithin != nil {
		p.FollowWithin = *o.FollowWithin
	}
	if o.Occurrences != nil {
		p.Occurrences = *o.Occurrences
	}
	if o.Severity != nil {
		p.Severity = Severity(*o.Severity)
	}
	if o.Scope != nil {
		p.Scope = Scope(*o.Scope)
	}
	if o.RecommendedAction != nil {
		a, err := event.ParseRecommendedAction(*o.RecommendedAction)
		if err != nil {
			return &ValidationError{Key: "recommendedAction", Reason: err.Error() + " (NONE, COMPONENT_RESET, CONTACT_SUPPORT, RUN_FIELDDIAG, RESTART_VM, RESTART_BM, REPLACE_VM, ...)"}
		}
		p.Action = a
	}
	for _, d := range []struct {
		dst *time.Duration
		v   Duration
	}{{&p.Dedupe, o.DedupeWindow}, {&p.Window, o.Window}, {&p.Quiet, o.QuietPeriod}} {
		if d.v.Set {
			*d.dst = d.v.D
		}
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidName reports whether name can be a pattern's: 1 to 64 letters,
// digits, '_', '-', '.' (a state file's condition keys are checked by it).
func ValidName(name string) bool { return nameRE.MatchString(name) }

func validate(p *Pattern) *ValidationError {
	bad := func(key, format string, a ...any) *ValidationError {
		return &ValidationError{Key: key, Reason: fmt.Sprintf(format, a...)}
	}
	if !nameRE.MatchString(p.Name) {
		return bad("name", "%q: use 1 to 64 letters, digits, '_', '-', '.'", p.Name)
	}
	for _, r := range reservedNames {
		if p.Name == r {
			return bad("name", "%q is reserved (nichealthctl ack DEV PORT %s); choose another name", p.Name, r)
		}
	}
	for _, rx := range []struct{ key, v string }{{"regex", p.Regex}, {"followedBy", p.FollowedBy}, {"clearRegex", p.ClearRegex}} {
		if len(rx.v) > maxRegex {
			return bad(rx.key, "longer than %d characters", maxRegex)
		}
		if _, err := regexp.Compile(rx.v); err != nil {
			return bad(rx.key, "does not compile: %v (RE2 syntax: no look-arounds or back-references)", unwrapRegexp(err))
		}
	}
	if p.Regex == "" {
		return bad("regex", "empty: it would match every record")
	}
	switch p.Severity {
	case Fatal, NonFatal, Informational:
	default:
		return bad("severity", "%q is not fatal, non-fatal or informational", p.Severity)
	}
	switch p.Scope {
	case ScopeNIC, ScopeNICOrNode, ScopeNode:
	default:
		return bad("scope", "%q is not nic, nic-or-node or node", p.Scope)
	}
	if len(p.Description) > maxDescription {
		return bad("description", "longer than %d characters", maxDescription)
	}
	if p.Dedupe < time.Second || p.Dedupe > maxWindow {
		return bad("dedupeWindow", "%v is outside 1s..168h", p.Dedupe)
	}
	if p.Occurrences < 1 || p.Occurrences > MaxOccurrences {
		return bad("occurrences", "%d is outside 1..%d", p.Occurrences, MaxOccurrences)
	}
	if p.Occurrences > 1 && (p.Window < time.Second || p.Window > maxWindow) {
		return bad("window", "%v is outside 1s..168h (occurrences = %d needs the window they fall within)", p.Window, p.Occurrences)
	}
	if p.Severity == NonFatal && (p.Quiet < time.Second || p.Quiet > maxWindow) {
		return bad("quietPeriod", "%v is outside 1s..168h (a non-fatal condition clears after it)", p.Quiet)
	}
	if p.FollowedBy != "" && (p.FollowWithin < 1 || p.FollowWithin > MaxOccurrences) {
		return bad("followWithin", "%d is outside 1..%d (records after the first line that may hold the second)", p.FollowWithin, MaxOccurrences)
	}
	if p.FollowedBy == "" && p.FollowWithin != 0 {
		return bad("followWithin", "set without followedBy")
	}
	return nil
}

// unwrapRegexp drops regexp's "error parsing regexp: " prefix, which the
// key already says.
func unwrapRegexp(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: %q", se.Code, se.Expr)
	}
	return err.Error()
}
