package readcore

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Loop is a reader's running half, used by its goroutine (and by what
// wakes it): its configuration, its wake-ups, its publication and its
// lines said once. C is the reader's configuration, R its reading.
type Loop[C, R any] struct {
	log    *slog.Logger
	client io.Closer

	mu  sync.Mutex
	cfg C

	latest atomic.Pointer[R]
	wake   chan struct{}
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{}

	// saidOnce is the goroutine's own.
	saidOnce map[string]bool
}

// New makes a reader's loop over client (its helper: Close closes it)
// with first as the reading published until the goroutine publishes
// another; Go starts it.
func New[C, R any](cfg C, first *R, client io.Closer, log *slog.Logger) *Loop[C, R] {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop[C, R]{log: log, client: client, cfg: cfg, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), saidOnce: map[string]bool{}}
	l.latest.Store(first)
	return l
}

// Go runs run on the reader's goroutine until Close cancels its context.
// Call it once.
func (l *Loop[C, R]) Go(run func(ctx context.Context)) {
	go func() {
		defer close(l.done)
		run(l.ctx)
	}()
}

// Core is the reader's face to its owner: Configure, Latest, Close.
func (l *Loop[C, R]) Core() Core[C, R] { return Core[C, R]{l} }

// Log is the reader's logger (never nil).
func (l *Loop[C, R]) Log() *slog.Logger { return l.log }

// Config is the configuration in force.
func (l *Loop[C, R]) Config() C {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// Poke wakes the goroutine (at most one wake-up waits); safe from any
// goroutine.
func (l *Loop[C, R]) Poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Wake is where the goroutine waits for a Poke.
func (l *Loop[C, R]) Wake() <-chan struct{} { return l.wake }

// Publish makes rd the latest reading; rd is never modified afterwards.
func (l *Loop[C, R]) Publish(rd *R) { l.latest.Store(rd) }

// SayOnce logs a warning once per process for key. Only the reader's
// goroutine calls it.
func (l *Loop[C, R]) SayOnce(key, msg string, args ...any) {
	if l.saidOnce[key] {
		return
	}
	l.saidOnce[key] = true
	l.log.Warn(msg, args...)
}

// Core is what a reader's owner holds: a reader embeds it, so its
// Configure, Latest and Close are these.
type Core[C, R any] struct{ l *Loop[C, R] }

// Configure applies a new configuration at once.
func (c Core[C, R]) Configure(cfg C) {
	c.l.mu.Lock()
	c.l.cfg = cfg
	c.l.mu.Unlock()
	c.l.Poke()
}

// Latest is the last published reading (never nil).
func (c Core[C, R]) Latest() *R { return c.l.latest.Load() }

// Close stops the reader and then its helper.
func (c Core[C, R]) Close() {
	c.l.cancel()
	<-c.l.done
	c.l.client.Close()
}
