package kernellog

import (
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// Options are the check's switches.
type Options struct {
	// MatchUserSpace also judges records written from user space (any
	// facility but the kernel's). Off by default: anyone allowed to write
	// /dev/kmsg could otherwise raise a fatal NIC condition, and the
	// kernel's facility cannot be forged. A driver's test harness that
	// replays mlx5 lines turns it on.
	MatchUserSpace bool
	Log            *slog.Logger
}

// MatchKey is one /metrics series of matches: the pattern and the device
// the record was about (the NIC, else the PCI address, else "none").
type MatchKey struct{ Pattern, Device string }

// Stats are the check's totals since start (not kept across restarts).
type Stats struct {
	Judged        uint64 // records judged
	OtherFacility uint64 // not the kernel's own (written from user space), not judged
	Unmonitored   uint64 // matched, about a function that is not monitored
	Unattributed  uint64 // matched, naming no function, on a pattern that needs one
	Suppressed    uint64 // added from the kernel's "callbacks suppressed" lines
	// Overflow are matched records past the bounds on conditions, counted
	// on the overflow condition.
	Overflow uint64
	// Work is the judging work done (see Cost), Deferred the records a
	// cycle's work budget left for the next one.
	Work     uint64
	Deferred uint64
	// OverBudget are records dropped because more waited than a cycle's
	// batch (the observer hands no more than Room, so it stays 0).
	OverBudget uint64
	Matches    map[MatchKey]uint64
}

// Cost is the work unit of judging: a regex run over a record costs the
// record's length plus regexCall; a literal test before it (most patterns
// have one, and most records fail it) an eighth of the length. It follows
// what judging costs whatever the machine's speed, so a budget of it is
// the same on every host and a test can count it.
const regexCall = 64

// DefaultBudget is the judging work one cycle may do (about 20 ms on a
// loaded 2-core machine): a batch of 1,024 mlx5 lines through the
// default table costs about a fifth of it, and a table of hundreds of
// patterns without literals is spread over cycles instead of stalling
// the loop.
const DefaultBudget = 4 << 20

// maxMatchSeries bounds the match series (records from user space may
// name anything when MatchUserSpace is on).
const maxMatchSeries = 512

// Check judges kernel log records. It is not safe for concurrent use.
type Check struct {
	table *Table
	opts  Options
	log   *slog.Logger
	// armed are two-record patterns waiting for their second record.
	armed []armed
	// lastByFunc remembers, per printing function, the condition its last
	// matched record went to, for the rate limiter's "callbacks
	// suppressed" line.
	lastByFunc map[string]string
	stats      Stats
	debug      repeats.Limiter
}

type armed struct {
	p      *compiled
	left   int
	first  string
	firstT time.Time
}

// New returns a check over a compiled table.
func New(t *Table, opts Options) *Check {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Check{table: t, opts: opts, log: log, lastByFunc: map[string]string{},
		stats: Stats{Matches: map[MatchKey]uint64{}}, debug: repeats.Limiter{Window: time.Minute}}
}

// SetTable replaces the patterns and options (a reload); Reconcile then
// settles the conditions of patterns that changed.
func (c *Check) SetTable(t *Table, opts Options) {
	c.table, c.armed = t, nil
	c.opts.MatchUserSpace = opts.MatchUserSpace
}

// Table returns the patterns in force.
func (c *Check) Table() *Table { return c.table }

// Stats returns a copy of the totals.
func (c *Check) Stats() Stats {
	s := c.stats
	s.Matches = make(map[MatchKey]uint64, len(c.stats.Matches))
	for k, v := range c.stats.Matches {
		s.Matches[k] = v
	}
	return s
}

var suppressedRE = regexp.MustCompile(`^(\w+): (\d+) callbacks suppressed$`)

// printingFunc is the function of mlx5's "func:line:(pid N):" after the
// device prefix, or "".
func printingFunc(s string) string {
	i := strings.Index(s, ":(pid ")
	if i < 0 {
		return ""
	}
	j := i
	for j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
		j--
	}
	if j == i || j == 0 || s[j-1] != ':' {
		return ""
	}
	end := j - 1
	k := end
	for k > 0 && (s[k-1] == '_' || s[k-1] >= 'a' && s[k-1] <= 'z' || s[k-1] >= 'A' && s[k-1] <= 'Z' || s[k-1] >= '0' && s[k-1] <= '9') {
		k--
	}
	return s[k:end]
}

// Judge judges records in order and returns the condition changes.
// changed says whether the memory moved beyond the cursor: the cursor
// alone is saved with the next change, since records re-read after a
// restart that matched nothing match nothing again.
func (c *Check) Judge(mem *Memory, recs []kmsg.Record, devs *Devices, now time.Time) (specs []event.Spec, changed bool) {
	specs, changed, _ = c.JudgeWithin(mem, recs, devs, now, 0)
	return specs, changed
}

// JudgeWithin is Judge within a work budget (0: none): it stops before
// the record that would start once budget units were spent, and returns
// how many records it judged (at least one, so judging always moves).
// The cursor covers the judged records only: the rest are judged next
// time, or read again after a restart.
func (c *Check) JudgeWithin(mem *Memory, recs []kmsg.Record, devs *Devices, now time.Time, budget uint64) (specs []event.Spec, changed bool, judged int) {
	start := c.stats.Work
	for i := range recs {
		if budget > 0 && i > 0 && c.stats.Work-start >= budget {
			return specs, changed, i
		}
		r := &recs[i]
		mem.Seq, mem.HasSeq = r.Seq, true
		c.stats.Judged++
		if r.Facility != kmsg.FacilityKernel && !c.opts.MatchUserSpace {
			c.stats.OtherFacility++
			continue
		}
		if strings.HasSuffix(r.Message, " callbacks suppressed") && c.suppressed(mem, r) {
			changed = true
			continue
		}
		specs = c.follow(mem, r, devs, now, specs, &changed)
		specs = c.clears(mem, r, devs, specs, &changed)
		p, m := c.match(r)
		if p == nil {
			continue
		}
		if p.follow != nil {
			if len(c.armed) < 16 {
				c.armed = append(c.armed, armed{p: p, left: p.FollowWithin, first: r.Message, firstT: r.Time})
			}
			continue
		}
		specs = c.matched(mem, p, r, devs.attribute(r, p, m), r.Message, devs, now, specs, &changed)
	}
	return specs, changed, len(recs)
}

// spend counts the work of one regex run over s.
func (c *Check) spend(s string) { c.stats.Work += uint64(len(s)) + regexCall }

// match returns the first enabled pattern the record matches, with the
// submatch indexes when the pattern names a function by group.
func (c *Check) match(r *kmsg.Record) (*compiled, []int) {
	for i := range c.table.patterns {
		p := &c.table.patterns[i]
		if !p.Enabled {
			continue
		}
		if len(p.must) > 0 {
			c.stats.Work += uint64(len(r.Message)/8) + 1
			if !containsAny(r.Message, p.must) {
				continue
			}
		}
		c.spend(r.Message)
		if ok, m := p.matches(r.Message); ok {
			return p, m
		}
	}
	return nil, nil
}

// matched turns a matched record into an occurrence of its condition, or
// counts why it is not one.
func (c *Check) matched(mem *Memory, p *compiled, r *kmsg.Record, pci, text string, devs *Devices, now time.Time, specs []event.Spec, changed *bool) []event.Spec {
	fn, monitored := devs.Monitored[pci]
	label := pci
	if monitored {
		label = fn.Device
	}
	if label == "" {
		label = "none"
	}
	c.count(MatchKey{p.Name, label}, 1)
	if p.Severity == patterntable.Informational {
		c.debugf(p.Name+pci, "kernel log record matched an informational pattern", p, pci, r)
		return specs
	}
	switch {
	case p.Scope == patterntable.ScopeNode:
		fn = Function{PCI: pci}
	case monitored:
	case pci != "" && devs.Known[pci]:
		c.stats.Unmonitored++
		c.debugf(p.Name+pci, "kernel log record about a function that is not monitored (VF, management or excluded NIC); not raised", p, pci, r)
		return specs
	case p.Scope == patterntable.ScopeNICOrNode:
		fn = Function{PCI: pci}
	default:
		if pci == "" {
			c.stats.Unattributed++
		} else {
			c.stats.Unmonitored++
		}
		c.debugf(p.Name+pci, "kernel log record names no monitored NIC; the pattern raises only on one (scope nic)", p, pci, r)
		return specs
	}
	key := Key(p.Name, fn.PCI)
	if f := printingFunc(r.Message); f != "" && c.lastByFunc[f] != key {
		if len(c.lastByFunc) > 256 {
			clear(c.lastByFunc)
		}
		c.lastByFunc[f] = key
	}
	return append(specs, c.occurrence(mem, p, key, fn, r, text, now, changed)...)
}

func (c *Check) count(k MatchKey, n uint64) {
	if _, ok := c.stats.Matches[k]; !ok && len(c.stats.Matches) >= maxMatchSeries {
		k.Device = "other"
	}
	c.stats.Matches[k] += n
}

// debugf logs at debug level, once a minute per pattern and message with
// the count (keyed without the function: a storm naming thousands of
// functions must not grow the limiter).
func (c *Check) debugf(_, msg string, p *compiled, pci string, r *kmsg.Record) {
	if ok, n := c.debug.Note(p.Name+"|"+msg, time.Now()); ok {
		c.log.Debug(msg, "pattern", p.Name, "pci", pci, "seq", r.Seq, "record", event.Clean(clip(r.Message)), "repeats", n)
	}
}

// occurrence counts one record on its condition and returns the raise it
// causes: the first occurrence (or the Nth within the window), then one
// event per de-duplication window.
func (c *Check) occurrence(mem *Memory, p *compiled, key string, fn Function, r *kmsg.Record, text string, now time.Time, changed *bool) []event.Spec {
	a := mem.Active[key]
	if a == nil {
		if p.Severity == patterntable.NonFatal && now.Sub(r.Time) >= p.Quiet {
			// Read from the ring long after it was written (the first
			// start after a boot's quiet period): it would clear again at
			// once.
			return nil
		}
		if why := mem.room(fn.PCI, fn.Device); why != "" {
			return c.overflowed(mem, p, fn, r, text, why, now, changed)
		}
		a = &Active{Pattern: p.Name, PCI: fn.PCI, First: r.Time}
		mem.Active[key] = a
	}
	*changed = true
	a.Device = fn.Device
	if !slices.Equal(a.Ports, fn.Ports) {
		a.Ports = slices.Clone(fn.Ports)
	}
	a.Count++
	if r.Time.After(a.Last) {
		a.Last = r.Time
	}
	a.Seq, a.Record = r.Seq, clip(text)
	if !a.Raised {
		if p.Occurrences > 1 {
			a.Recent = append(within(a.Recent, r.Time.Add(-p.Window)), r.Time)
			if len(a.Recent) < p.Occurrences {
				return nil
			}
			a.Recent = nil
		}
		a.Raised, a.Fatal = true, p.Severity == patterntable.Fatal
		return []event.Spec{c.raise(a, p.Pattern, now)}
	}
	if now.Sub(a.Reported) >= p.Dedupe {
		return []event.Spec{c.raise(a, p.Pattern, now)}
	}
	return nil
}

// within keeps the times at or after from.
func within(ts []time.Time, from time.Time) []time.Time {
	out := ts[:0]
	for _, t := range ts {
		if !t.Before(from) {
			out = append(out, t)
		}
	}
	if len(out) > patterntable.MaxOccurrences {
		out = out[len(out)-patterntable.MaxOccurrences:]
	}
	return out
}

// suppressed handles the rate limiter's "func: N callbacks suppressed":
// the N records it did not print count on the condition the function's
// last printed record went to.
func (c *Check) suppressed(mem *Memory, r *kmsg.Record) bool {
	sm := suppressedRE.FindStringSubmatch(r.Message)
	if sm == nil {
		return false
	}
	a := mem.Active[c.lastByFunc[sm[1]]]
	n, err := strconv.ParseUint(sm[2], 10, 32)
	if a == nil || err != nil {
		return false
	}
	a.Count += n
	c.stats.Suppressed += n
	label := a.Device
	if label == "" {
		label = a.PCI
	}
	if label == "" {
		label = "none"
	}
	c.count(MatchKey{a.Pattern, label}, n)
	return true
}

// follow feeds a record to the armed two-record patterns.
func (c *Check) follow(mem *Memory, r *kmsg.Record, devs *Devices, now time.Time, specs []event.Spec, changed *bool) []event.Spec {
	kept := c.armed[:0]
	for _, a := range c.armed {
		if a.p.follow.MatchString(r.Message) {
			text := a.first + " … " + r.Message
			specs = c.matched(mem, a.p, r, devs.attribute(r, a.p, nil), text, devs, now, specs, changed)
			continue
		}
		if a.left--; a.left > 0 {
			kept = append(kept, a)
		}
	}
	c.armed = kept
	return specs
}

// clears applies the patterns' clear regexes to the record's function:
// only the few patterns that have one are tried, and each names the one
// condition it can clear, so the cost of a record does not grow with the
// conditions held.
func (c *Check) clears(mem *Memory, r *kmsg.Record, devs *Devices, specs []event.Spec, changed *bool) []event.Spec {
	var pci string
	attributed := false
	for _, p := range c.table.clearing {
		if !p.Enabled {
			continue
		}
		c.spend(r.Message)
		if !p.clear.MatchString(r.Message) {
			continue
		}
		if !attributed {
			pci, attributed = devs.attribute(r, p, nil), true
		}
		k := Key(p.Name, pci)
		if a := mem.Active[k]; a != nil && a.Raised {
			*changed = true
			specs = append(specs, c.clear(mem, k, a, "the kernel said so: "+clip(r.Message)))
		}
	}
	return specs
}

// overflowed counts a matched record past the bounds on the overflow
// condition, raised once (again when the first fatal record comes, and
// once per de-duplication window while the count grows).
func (c *Check) overflowed(mem *Memory, p *compiled, fn Function, r *kmsg.Record, text, why string, now time.Time, changed *bool) []event.Spec {
	*changed = true
	c.stats.Overflow++
	a := mem.overflow(r.Time)
	a.Count++
	if r.Time.After(a.Last) {
		a.Last = r.Time
	}
	at := "the node"
	if fn.PCI != "" {
		at = fn.PCI
	}
	a.Seq, a.Record = r.Seq, clip(p.Name+" on "+at+" ("+why+"): "+text)
	fatal := p.Severity == patterntable.Fatal
	if !a.Raised || fatal && !a.Fatal {
		a.Raised, a.Fatal = true, a.Fatal || fatal
		return []event.Spec{c.raise(a, overflowPattern(a), now)}
	}
	if now.Sub(a.Reported) >= defaultOverflowDedupe {
		return []event.Spec{c.raise(a, overflowPattern(a), now)}
	}
	return nil
}

const defaultOverflowDedupe = 5 * time.Minute

// overflowPattern is the overflow condition's pattern: fatal once a fatal
// record was among those past the bounds.
func overflowPattern(a *Active) *patterntable.Pattern {
	p := &patterntable.Pattern{Name: OverflowName, Severity: patterntable.NonFatal, Action: event.ActionNone,
		Dedupe: defaultOverflowDedupe, Occurrences: 1, Quiet: time.Hour, Scope: patterntable.ScopeNode, Enabled: true,
		Source: "the kernel-log check's bounds",
		Description: fmt.Sprintf("and %d more: kernel log records matched patterns past what the check keeps (%d conditions in all, %d per function, %d functions without a monitored RDMA device); they are counted here, not raised one by one. Fix: find the storm's source in the kernel log (journalctl -k), then nichealthctl ack DEVICE PORT kernel_log",
			a.Count, MaxConditions, MaxPerFunction, MaxOtherFunctions)}
	if a.Fatal {
		p.Severity, p.Action = patterntable.Fatal, event.ActionReplaceVM
	}
	return p
}

// patternOf is the pattern a condition is judged by: its table row, the
// overflow's own, or nil when the table no longer has it.
func (c *Check) patternOf(a *Active) *patterntable.Pattern {
	if a.Pattern == OverflowName {
		return overflowPattern(a)
	}
	if p := c.table.byName[a.Pattern]; p != nil {
		return p.Pattern
	}
	return nil
}

func clip(s string) string {
	if len(s) > maxRecord {
		return s[:maxRecord] + "…"
	}
	return s
}
