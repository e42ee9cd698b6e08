package overlay

// Verdict is a port's health as its daemon judged it, in a closed
// vocabulary: whatever a status dump or a Prometheus label says, the
// overlay holds one of these values and nothing else, so no text from a
// node reaches a view as a verdict (a dump saying `"><img …>` is
// Unknown, not markup).
type Verdict uint8

const (
	// NotReported: no daemon reported the port (a switch, a host without
	// nichealthd). The zero value.
	NotReported Verdict = iota
	// Unknown: a daemon reported the port with a verdict this tool does
	// not know (a newer daemon, a damaged or hostile dump).
	Unknown
	Healthy
	Degraded
	Fatal
)

// verdictNames is the vocabulary, indexed by Verdict: the words
// nichealthctl status --json prints, and the only words a view shows.
var verdictNames = [...]string{NotReported: "", Unknown: "unknown", Healthy: "healthy", Degraded: "degraded", Fatal: "fatal"}

// ParseVerdict reads a daemon's verdict word. The three words nichealthd
// prints map to their verdicts, "" to NotReported, anything else to
// Unknown: the input is never passed through.
func ParseVerdict(s string) Verdict {
	switch s {
	case "":
		return NotReported
	case "healthy":
		return Healthy
	case "degraded":
		return Degraded
	case "fatal":
		return Fatal
	}
	return Unknown
}

// String is the verdict's word ("" for NotReported).
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return verdictNames[Unknown]
}

// MarshalText writes the verdict's word.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a word as ParseVerdict does; it never fails.
func (v *Verdict) UnmarshalText(b []byte) error {
	*v = ParseVerdict(string(b))
	return nil
}

// Worse returns the worse of two verdicts. Not reported is better than
// any report, and a verdict this tool does not know ranks below healthy:
// it neither hides a known fault nor invents one.
func Worse(a, b Verdict) Verdict {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

func (v Verdict) rank() int {
	if int(v) < len(verdictNames) {
		return int(v)
	}
	return int(Unknown)
}
