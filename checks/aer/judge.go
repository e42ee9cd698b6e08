package aer

import (
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/aerfile"
)

// Thresholds are the [pcieAER] settings the judgement uses.
type Thresholds struct {
	// CorrectablePerMinute is the correctable-error rate, averaged over
	// Window, above which a function is degraded.
	CorrectablePerMinute float64
	Window               time.Duration
	// NonFatalQuiet is how long a function must stay free of new
	// uncorrectable non-fatal errors before its condition clears.
	NonFatalQuiet time.Duration
}

// ringLen samples of the correctable total cover one window: a sample is
// kept every Window/(ringLen-2), so the oldest is always at least a window
// old once the function has been watched that long.
const ringLen = 18

type sample struct {
	at    time.Time
	total uint64
}

// Function is one PCI function on the path of monitored NICs, as the
// check watches it: read once per cadence however many NICs are below.
type Function struct {
	Address string
	// Label says what the function is, e.g. "switch port above mlx5_0,
	// mlx5_1"; Check is the check name its events carry; Ports are the
	// monitored ports below it (the events' NIC/NICPort entities).
	Label string
	Check string
	Ports []event.PortRef

	// window and threshold are the settings of the last judgement, for
	// the message.
	window    time.Duration
	threshold float64

	ring  [ringLen]sample
	rn    int // samples held
	rhead int // index of the oldest
}

// Judge compares a reading with what mem remembers of the function and
// returns the condition changes. The first reading of a function mem does
// not know is its baseline (no event). It allocates only when something
// moved.
func (f *Function) Judge(mem *Memory, r *aerfile.Reading, now time.Time, th Thresholds) (specs []event.Spec, changed bool) {
	fm := mem.Functions[f.Address]
	if fm == nil {
		mem.Functions[f.Address] = newFunctionMemory(r, now)
		f.push(now, r.Counts[aerfile.Correctable].Total, th.Window, true)
		return nil, true
	}
	if f.rn == 0 {
		// Restarted: the rate since the last saved read includes what the
		// counters gathered while the daemon was down.
		f.push(fm.At, fm.Totals[aerfile.Correctable], th.Window, true)
	}
	var moved [aerfile.NumClasses]string
	for cl := aerfile.Class(0); cl < aerfile.NumClasses; cl++ {
		if !r.Present[cl] || same(fm, cl, &r.Counts[cl]) {
			continue
		}
		changed = true
		c := &r.Counts[cl]
		switch {
		case fm.Counts[cl] == nil:
			// The file was absent until now: this is its baseline.
		case c.Total < fm.Totals[cl]:
			specs = append(specs, f.reset(fm, cl, now)...)
			f.rn = 0
		default:
			moved[cl] = movedNames(fm.Counts[cl], c)
		}
		fm.Counts[cl], fm.Totals[cl] = countsMap(c), c.Total
	}
	if changed {
		fm.At = now
	}
	for _, cl := range []aerfile.Class{aerfile.Fatal, aerfile.NonFatal} {
		if moved[cl] != "" {
			specs = append(specs, f.raise(fm, cl, moved[cl], now, 0))
		}
	}
	if r.Present[aerfile.NonFatal] {
		specs = append(specs, f.quiet(fm, now, th)...)
	}
	if r.Present[aerfile.Correctable] {
		specs = append(specs, f.rate(fm, r.Counts[aerfile.Correctable].Total, moved[aerfile.Correctable], now, th)...)
	}
	return specs, changed || len(specs) > 0
}

func newFunctionMemory(r *aerfile.Reading, now time.Time) *FunctionMemory {
	fm := &FunctionMemory{At: now}
	for cl := aerfile.Class(0); cl < aerfile.NumClasses; cl++ {
		if r.Present[cl] {
			fm.Counts[cl], fm.Totals[cl] = countsMap(&r.Counts[cl]), r.Counts[cl].Total
		}
	}
	return fm
}

// same compares without allocating (a map index by string(bytes) does not
// copy the key). The memory keeps only the names that are not zero.
func same(fm *FunctionMemory, cl aerfile.Class, c *aerfile.Counts) bool {
	if fm.Totals[cl] != c.Total || fm.Counts[cl] == nil {
		return false
	}
	nonzero := 0
	for i := 0; i < c.N; i++ {
		if fm.Counts[cl][string(c.Name(i))] != c.Value(i) {
			return false
		}
		if c.Value(i) != 0 {
			nonzero++
		}
	}
	return nonzero == len(fm.Counts[cl])
}

// countsMap keeps the names that are not zero (a healthy function's
// memory is a few bytes); it is never nil, so a file that was read is
// told apart from one that was absent.
func countsMap(c *aerfile.Counts) map[string]uint64 {
	m := map[string]uint64{}
	for i := 0; i < c.N; i++ {
		if c.Value(i) != 0 {
			m[string(c.Name(i))] = c.Value(i)
		}
	}
	return m
}

// movedNames lists "Name +delta" for every name that went up, in the
// file's order; a total that moved with no named counter says so.
func movedNames(prev map[string]uint64, c *aerfile.Counts) string {
	var parts []string
	for i := 0; i < c.N; i++ {
		if p := prev[string(c.Name(i))]; c.Value(i) > p {
			parts = append(parts, fmt.Sprintf("%s +%d", c.Name(i), c.Value(i)-p))
		}
	}
	if len(parts) == 0 && c.Total > sumOf(prev) {
		parts = append(parts, fmt.Sprintf("unnamed +%d", c.Total-sumOf(prev)))
	}
	return strings.Join(parts, ", ")
}

func sumOf(m map[string]uint64) uint64 {
	var s uint64
	for _, v := range m {
		s += v
	}
	return s
}
