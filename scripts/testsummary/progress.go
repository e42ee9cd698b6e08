package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// progress says, for a package whose tests have run longer than every,
// how far it is: the black-box packages run for minutes with nothing to
// print until they end, and a CI log that is silent that long looks hung.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	every time.Duration
	pkgs  map[string]*pkgProgress
}

type pkgProgress struct {
	start, said time.Time
	passed      int
	running     map[string]time.Time // top-level tests started and not ended
}

func newProgress(w io.Writer, every time.Duration) *progress {
	return &progress{w: w, every: every, pkgs: map[string]*pkgProgress{}}
}

// event notes one go test -json event, at now.
func (p *progress) event(e testEvent, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Package == "" {
		return
	}
	pp := p.pkgs[e.Package]
	if pp == nil {
		pp = &pkgProgress{start: now, said: now, running: map[string]time.Time{}}
		p.pkgs[e.Package] = pp
	}
	if e.Test == "" {
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			delete(p.pkgs, e.Package)
		}
		return
	}
	top := !strings.Contains(e.Test, "/")
	switch e.Action {
	case "run":
		if top {
			pp.running[e.Test] = now
		}
	case "pause":
		if top {
			delete(pp.running, e.Test)
		}
	case "cont":
		if top {
			pp.running[e.Test] = now
		}
	case "pass":
		pp.passed++
		if top {
			delete(pp.running, e.Test)
		}
	case "fail", "skip":
		if top {
			delete(pp.running, e.Test)
		}
	}
}

// tick prints one line for each package that has run for longer than
// every since its start or its last line.
func (p *progress) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.pkgs))
	for n := range p.pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pp, ok := p.pkgs[n]
		if !ok || pp == nil || now.Sub(pp.said) < p.every {
			continue
		}
		pp.said = now
		line := fmt.Sprintf("...  %s running %s: %d passed", n, now.Sub(pp.start).Round(time.Second), pp.passed)
		if t, since := pp.longest(); t != "" {
			line += fmt.Sprintf(", %s for %s", t, now.Sub(since).Round(time.Second))
			if k := len(pp.running) - 1; k > 0 {
				line += fmt.Sprintf(" (and %d more)", k)
			}
		}
		fmt.Fprintln(p.w, line)
	}
}

// longest is the running test that started first.
func (pp *pkgProgress) longest() (string, time.Time) {
	var name string
	var since time.Time
	for t, s := range pp.running {
		if name == "" || s.Before(since) || s.Equal(since) && t < name {
			name, since = t, s
		}
	}
	return name, since
}

// syncWriter lets the summary and the progress ticker write to one
// writer from two goroutines, a whole line at a time.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
