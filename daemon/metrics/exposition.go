package metrics

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// kind is a metric family's TYPE.
type kind uint8

const (
	gauge kind = iota
	counter
	histogram
	summary
)

func (k kind) String() string {
	switch k {
	case counter:
		return "counter"
	case histogram:
		return "histogram"
	case summary:
		return "summary"
	}
	return "gauge"
}

// desc is one metric family of the exposition: the table in collect.go
// drives the output, so adding a metric is one row plus one fill line.
type desc struct {
	name string
	help string
	kind kind
}

// value is a sample value. Counter readings are uint64 and are written as
// exact integers, because a float64 would round hardware counters above
// 2^53 and a scrape would then show a counter stepping backwards.
type value struct {
	f      float64
	u      uint64
	isUint bool
}

func fval(f float64) value { return value{f: f} }
func uval(u uint64) value  { return value{u: u, isUint: true} }
func bval(b bool) value {
	if b {
		return value{u: 1, isUint: true}
	}
	return value{isUint: true}
}

// sample is one line of a family; its label set is arena[lo:hi], already
// rendered as {name="value",...} (empty for an unlabelled sample).
type sample struct {
	lo, hi uint32
	v      value
}

// labelSet is a rendered label set inside the encoder's arena, so one set
// (a port's identity) can be shared by several families without copying.
type labelSet struct{ lo, hi uint32 }

// encoder accumulates samples per family and writes the exposition. It is
// reused across scrapes (reset keeps the buffers), so a steady-state
// scrape allocates almost nothing.
type encoder struct {
	arena   []byte
	samples [][]sample // indexed like the desc table
	out     []byte
	// sink, when set, takes out's bytes whenever they pass spillAt
	// (spill), so a large page is never whole in memory uncompressed;
	// spilled counts them.
	sink    io.Writer
	spilled int
	// fabric is the share's ports in label order (writeFabric).
	fabric fabricIDs
}

// spillAt is how much of the page the encoder holds before handing it to
// its sink.
const spillAt = 64 << 10

// spill hands out to the sink once it passes spillAt. Without a sink the
// page stays whole in out.
func (e *encoder) spill() {
	if len(e.out) >= spillAt {
		e.flush()
	}
}

// flush hands out to the sink, if there is one.
func (e *encoder) flush() {
	if e.sink == nil {
		return
	}
	e.sink.Write(e.out) // an in-memory compressor: never fails
	e.spilled += len(e.out)
	e.out = e.out[:0]
}

func newEncoder(families int) *encoder {
	return &encoder{samples: make([][]sample, families)}
}

func (e *encoder) reset() {
	e.arena = e.arena[:0]
	for i := range e.samples {
		e.samples[i] = e.samples[i][:0]
	}
	e.out = e.out[:0]
	e.spilled = 0
}

// labels renders name/value pairs (kv alternates name, value) into the
// arena. Label names are constants of this package; values come from
// sysfs, configuration and sink names and are escaped.
func (e *encoder) labels(kv ...string) labelSet {
	return e.extend(labelSet{}, kv...)
}

// extend renders base plus more pairs as a new set (base's pairs first).
func (e *encoder) extend(base labelSet, kv ...string) labelSet {
	lo := len(e.arena)
	if len(kv) < 2 {
		return base
	}
	if base.lo == base.hi {
		e.arena = append(e.arena, '{')
	} else {
		e.arena = append(e.arena, e.arena[base.lo:base.hi-1]...) // without the closing brace
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 || base.lo != base.hi {
			e.arena = append(e.arena, ',')
		}
		e.arena = append(e.arena, kv[i]...)
		e.arena = append(e.arena, '=', '"')
		e.arena = appendLabelValue(e.arena, kv[i+1])
		e.arena = append(e.arena, '"')
	}
	e.arena = append(e.arena, '}')
	return labelSet{uint32(lo), uint32(len(e.arena))}
}

func (e *encoder) add(family int, ls labelSet, v value) {
	e.samples[family] = append(e.samples[family], sample{ls.lo, ls.hi, v})
}

// writeFamily writes HELP, TYPE and the samples of one gauge or counter
// family, sorted by label set so the output is stable across scrapes. A
// repeated label set keeps only its first sample: Prometheus rejects a
// whole scrape that contains a duplicate series, so one inconsistent view
// must not blank every metric of the node.
func (e *encoder) writeFamily(d desc, ss []sample) {
	if len(ss) == 0 {
		return
	}
	slices.SortStableFunc(ss, func(a, b sample) int {
		return bytes.Compare(e.arena[a.lo:a.hi], e.arena[b.lo:b.hi])
	})
	e.writeHeader(d)
	for i, s := range ss {
		ls := e.arena[s.lo:s.hi]
		if i > 0 && bytes.Equal(ls, e.arena[ss[i-1].lo:ss[i-1].hi]) {
			continue
		}
		e.out = append(e.out, d.name...)
		e.out = append(e.out, ls...)
		e.out = append(e.out, ' ')
		e.out = appendValue(e.out, s.v)
		e.out = append(e.out, '\n')
		e.spill()
	}
}

func (e *encoder) writeHeader(d desc) {
	e.out = append(e.out, "# HELP "...)
	e.out = append(e.out, d.name...)
	e.out = append(e.out, ' ')
	e.out = appendHelp(e.out, d.help)
	e.out = append(e.out, "\n# TYPE "...)
	e.out = append(e.out, d.name...)
	e.out = append(e.out, ' ')
	e.out = append(e.out, d.kind.String()...)
	e.out = append(e.out, '\n')
}

// writeHistogram writes an unlabelled histogram: cumulative _bucket lines
// in ascending le order ending with +Inf, then _sum and _count. counts[i]
// is the number of observations in bucket i alone (the last one is above
// every bound), so _count always equals the +Inf bucket.
func (e *encoder) writeHistogram(d desc, bounds []float64, counts []uint64, sum float64) {
	e.writeHeader(d)
	var cum uint64
	for i, c := range counts {
		cum += c
		e.out = append(e.out, d.name...)
		e.out = append(e.out, `_bucket{le="`...)
		if i < len(bounds) {
			e.out = appendFloat(e.out, bounds[i])
		} else {
			e.out = append(e.out, "+Inf"...)
		}
		e.out = append(e.out, `"} `...)
		e.out = strconv.AppendUint(e.out, cum, 10)
		e.out = append(e.out, '\n')
	}
	e.out = append(e.out, d.name...)
	e.out = append(e.out, "_sum "...)
	e.out = appendFloat(e.out, sum)
	e.out = append(e.out, '\n')
	e.out = append(e.out, d.name...)
	e.out = append(e.out, "_count "...)
	e.out = strconv.AppendUint(e.out, cum, 10)
	e.out = append(e.out, '\n')
}

func appendValue(b []byte, v value) []byte {
	if v.isUint {
		return strconv.AppendUint(b, v.u, 10)
	}
	return appendFloat(b, v.f)
}

// appendFloat writes a float as the format requires (Go ParseFloat syntax,
// with NaN, +Inf and -Inf spelled so). Whole numbers below 2^53 are written
// as integers so timestamps read 1700000000, not 1.7e+09, to an operator
// using curl; both parse to the same value.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		return strconv.AppendInt(b, int64(f), 10)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendLabelValue escapes backslash, double quote and line feed, the
// three escapes the text format defines inside label values. Invalid UTF-8
// (a corrupt sysfs name) is replaced, because the format requires UTF-8
// and a scraper would reject the whole page otherwise.
func appendLabelValue(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '\\':
				b = append(b, '\\', '\\')
			case '"':
				b = append(b, '\\', '"')
			case '\n':
				b = append(b, '\\', 'n')
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

// appendHelp escapes a HELP text: only backslash and line feed are escapes
// there.
func appendHelp(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, s[i])
		}
	}
	return b
}
