package mad

import (
	"errors"
	"log/slog"
	"time"
)

// Config says how to run the helper.
type Config struct {
	// Path is the helper executable.
	Path string
	// Env is its environment; nil: the daemon's own.
	Env []string
	// Dir is its working directory; "": the daemon's.
	Dir string
	// StartTimeout bounds the helper's start and its hello (the dynamic
	// loader, the libraries' initialisation). Default 5 s.
	StartTimeout time.Duration
	// Grace is what a request may take beyond its own timeout before the
	// helper counts as hung (the process's scheduling, its JSON). Default
	// 1 s.
	Grace time.Duration
	// MinBackoff and MaxBackoff pace restarts after a crash or a hang.
	// Defaults 1 s and 5 min.
	MinBackoff, MaxBackoff time.Duration
	Log                    *slog.Logger
}

func (c *Config) defaults() {
	if c.StartTimeout <= 0 {
		c.StartTimeout = 5 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = time.Second
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(5*time.Minute, c.MinBackoff)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Health is how the helper is doing.
type Health int

const (
	// NotStarted: no request has needed it yet.
	NotStarted Health = iota
	// Running: it answered its last request (an answer that reports a
	// failed MAD counts: the helper works, the fabric did not answer).
	Running
	// Restarting: it crashed, hung or broke the protocol; it is started
	// again on a request after the backoff.
	Restarting
	// Unavailable: it cannot run on this host (not installed, or its
	// libraries are missing); tried again after the longest backoff.
	Unavailable
	// Stopped: Close was called.
	Stopped
)

func (h Health) String() string {
	return [...]string{"not started", "running", "restarting", "unavailable", "stopped"}[h]
}

// State is the helper's health, why, since when, and how many helpers
// have been started.
type State struct {
	Health Health
	// Reason says what happened and the fix, for operators.
	Reason string
	Since  time.Time
	// Starts counts helpers that started and answered hello.
	Starts uint64
	// PID is the running helper's process id (0: none).
	PID int
}

// Errors of a request that got no answer. An answer that reports a failed
// operation is a *wire.Error instead.
var (
	// ErrNotRunning: the helper is backing off or unavailable; the State
	// says why.
	ErrNotRunning = errors.New("nichealth-mad is not running")
	// ErrLost: the helper hung, exited or broke the protocol during the
	// request; it was killed.
	ErrLost = errors.New("nichealth-mad was lost during the request")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("nichealth-mad client closed")
)
