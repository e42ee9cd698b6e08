package latch

import (
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Key is what a raised set is keyed by: a name (a finding, a class, a
// PCI address) or a port.
type Key interface{ string | Port }

// Set is a check's raised conditions by key, each with what its raise
// recorded (since when, under which check, what it named), so that its
// clear can say the same. It is a map: in a section of the state file it
// is the JSON object it always was.
type Set[K Key, V any] map[K]V

// Raise records k's condition as v.
func (s *Set[K, V]) Raise(k K, v V) {
	if *s == nil {
		*s = Set[K, V]{}
	}
	(*s)[k] = v
}

// Clear forgets k's condition and reports whether it was raised.
func (s Set[K, V]) Clear(k K) bool {
	_, ok := s[k]
	delete(s, k)
	return ok
}

// Has reports whether k's condition is raised.
func (s Set[K, V]) Has(k K) bool {
	_, ok := s[k]
	return ok
}

// Keys are the raised keys in the order the state file lists them:
// whatever order a check walks its conditions in (clears, replays,
// drops), it is the same at every run.
func (s Set[K, V]) Keys() []K {
	keys := make([]K, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare[K])
	return keys
}

// All is every entry in key order (Keys): the set may change while it
// runs, each key as it is when reached.
func (s Set[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for _, k := range s.Keys() {
			if v, ok := s[k]; ok && !yield(k, v) {
				return
			}
		}
	}
}

func compare[K Key](a, b K) int {
	switch x := any(a).(type) {
	case Port:
		return x.Compare(any(b).(Port))
	case string:
		return strings.Compare(x, any(b).(string))
	}
	return 0
}

// Sweep clears, in key order, every raised key that still refuses (the
// cycle no longer finds its condition) and hands each to cleared with
// what its raise recorded, so that the clear says the same; it reports
// how many it cleared.
func (s Set[K, V]) Sweep(still func(K) bool, cleared func(K, V)) int {
	n := 0
	for _, k := range s.Keys() {
		if still(k) {
			continue
		}
		v := s[k]
		delete(s, k)
		cleared(k, v)
		n++
	}
	return n
}

// Keep validates a set read back from a state file: in key order, each
// entry for which bad gives a reason is dropped, and listed as
// "<where>[<key>]: <reason>". bad sees the entries dropped before it gone
// (a bound on the set's size counts what is left) and may mend an entry
// it keeps (drop what is inside it, listing that itself).
func (s Set[K, V]) Keep(where string, bad func(k K, v V) string) (dropped []string) {
	for _, k := range s.Keys() {
		if why := bad(k, s[k]); why != "" {
			dropped = append(dropped, fmt.Sprintf("%s[%q]: %s", where, text(k), why))
			delete(s, k)
		}
	}
	return dropped
}

func text[K Key](k K) string {
	if p, ok := any(k).(Port); ok {
		return p.String()
	}
	return any(k).(string)
}

// KeepKeys is Keep for a rule on the key alone: each key ok refuses is
// dropped, listed with why.
func (s Set[K, V]) KeepKeys(where, why string, ok func(K) bool) (dropped []string) {
	return s.Keep(where, func(k K, _ V) string {
		if ok(k) {
			return ""
		}
		return why
	})
}

// Rekey moves every entry whose key to gives a new key (ok) to that key:
// a device renamed under the same PCI address keeps what it raised.
func (s Set[K, V]) Rekey(to func(K) (K, bool)) {
	for _, k := range s.Keys() {
		if nk, ok := to(k); ok && nk != k {
			s[nk] = s[k]
			delete(s, k)
		}
	}
}
