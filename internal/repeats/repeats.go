package repeats

import (
	"sync"
	"time"
)

// DefaultKeys is how many kinds a Limiter tracks apart when Keys is zero.
// Callers' kinds are error texts and helper stderr lines: a few dozen in a
// bad hour. Past that the source is flooding distinct lines, and telling
// them apart is worth less than a bounded cost per line.
const DefaultKeys = 256

// keyMax is how much of a key is kept: distinct lines that share their
// first keyMax bytes are one kind, so a flood of long lines cannot grow
// the set either.
const keyMax = 256

// Limiter is safe for concurrent use; the zero value never suppresses.
//
// Its cost is O(1) a line and its memory bounded whatever comes in: at
// most Keys kinds are told apart, kept in the order they were last logged.
// A new kind that finds the set full takes the place of the oldest kind
// whose window is over; when every kept kind is still inside its window,
// the new line goes to one shared "other lines" kind, logged at most once
// a window with the count of the others held back. A kind forgotten with
// repeats still unreported hands that count to the shared kind, so no
// suppressed line goes uncounted.
type Limiter struct {
	// Window is how long repeats of a kind are only counted.
	Window time.Duration
	// Keys caps the kinds told apart (DefaultKeys when zero).
	Keys int

	mu    sync.Mutex
	index map[string]int32 // key -> slot
	slots []slot
	// head is the slot logged longest ago, tail the latest (-1: none).
	head, tail int32
	other      slot // the shared kind of lines past the cap
}

// slot is one kind: when it was last logged and the repeats since. Slots
// form a doubly linked list by last logging, oldest first.
type slot struct {
	key        string
	at         time.Time
	n          int
	logged     bool
	prev, next int32
}

// Note reports whether a line of kind key should be logged now, and how
// many were suppressed since the last one that was.
func (r *Limiter) Note(key string, now time.Time) (log bool, suppressed int) {
	if len(key) > keyMax {
		key = key[:keyMax]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.index == nil {
		r.index = map[string]int32{}
		r.head, r.tail = -1, -1
	}
	if i, ok := r.index[key]; ok {
		s := &r.slots[i]
		if now.Sub(s.at) < r.Window {
			s.n++
			return false, 0
		}
		suppressed = s.n
		s.at, s.n = now, 0
		r.unlink(i)
		r.pushBack(i)
		return true, suppressed
	}
	i, ok := r.free(now)
	if !ok {
		o := &r.other
		if o.logged && now.Sub(o.at) < r.Window {
			o.n++
			return false, 0
		}
		suppressed = o.n
		o.at, o.n, o.logged = now, 0, true
		return true, suppressed
	}
	r.slots[i] = slot{key: key, at: now}
	r.index[key] = i
	r.pushBack(i)
	return true, 0
}

// free returns a slot for a new kind: a new one below the cap, else the
// oldest kind's if its window is over (it is forgotten); false when every
// kept kind is still inside its window.
func (r *Limiter) free(now time.Time) (int32, bool) {
	limit := r.Keys
	if limit <= 0 {
		limit = DefaultKeys
	}
	if len(r.slots) < limit {
		r.slots = append(r.slots, slot{})
		return int32(len(r.slots) - 1), true
	}
	h := r.head
	if h < 0 || now.Sub(r.slots[h].at) < r.Window {
		return 0, false
	}
	old := &r.slots[h]
	r.other.n += old.n
	delete(r.index, old.key)
	r.unlink(h)
	return h, true
}

func (r *Limiter) unlink(i int32) {
	s := &r.slots[i]
	if s.prev >= 0 {
		r.slots[s.prev].next = s.next
	} else {
		r.head = s.next
	}
	if s.next >= 0 {
		r.slots[s.next].prev = s.prev
	} else {
		r.tail = s.prev
	}
	s.prev, s.next = -1, -1
}

func (r *Limiter) pushBack(i int32) {
	s := &r.slots[i]
	s.prev, s.next = r.tail, -1
	if r.tail >= 0 {
		r.slots[r.tail].next = i
	} else {
		r.head = i
	}
	r.tail = i
}

// Len is the number of kinds told apart now (at most Keys).
func (r *Limiter) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.index)
}
