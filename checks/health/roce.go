package health

import "time"

// RoCE is what the RoCE congestion and loss check (checks/roce, DESIGN.md
// section 16) says of a RoCE port: the classes it is in, and what its
// last window measured. roce-congested is here and nowhere in the
// conditions: it is information, not a fault.
type RoCE struct {
	// Classes are the port's classes in checks/roce's order, Evidence
	// each one's evidence.
	Classes  []string
	Evidence []string
	// Judged says a window was judged since the daemon started; the
	// rates are that window's (per second).
	Judged               bool
	Window               time.Duration
	CongestionPerSecond  float64
	LossPerSecond        float64
	OutOfBufferPerSecond float64
	RxDiscardsPerSecond  float64
	StormEvents          uint64
	// PauseLostGbps and PauseLostPercent are the rx pause time of the
	// priority paused longest (PausePriority; -1 none) as bandwidth the
	// port could not send.
	PauseLostGbps    float64
	PauseLostPercent float64
	PausePriority    int
	// Signals is how many of the RoCE counters the port has.
	Signals int
}

// Has reports whether the port is in class.
func (r *RoCE) Has(class string) bool {
	if r == nil {
		return false
	}
	for _, c := range r.Classes {
		if c == class {
			return true
		}
	}
	return false
}
