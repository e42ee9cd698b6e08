package mad

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/mad/wire"
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

// Client is the supervised helper. Its methods are safe for concurrent use
// and run one request at a time.
type Client struct {
	cfg Config

	mu        sync.Mutex
	p         *proc
	nextID    uint64
	ep        backoff.Episode
	notBefore time.Time
	lastWait  time.Duration
	closed    bool

	stateMu sync.Mutex
	state   State

	logs repeats.Limiter
}

// New is a client of the helper at cfg.Path; nothing starts until the
// first request.
func New(cfg Config) *Client {
	cfg.defaults()
	c := &Client{cfg: cfg, logs: repeats.Limiter{Window: time.Hour}}
	c.ep = backoff.Episode{Min: cfg.MinBackoff, Max: cfg.MaxBackoff}
	c.state = State{Health: NotStarted, Since: time.Now()}
	return c
}

// State is the helper's current health.
func (c *Client) State() State {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.state
}

func (c *Client) setState(h Health, reason string) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if c.state.Health != h || c.state.Reason != reason {
		c.state.Since = time.Now()
	}
	c.state.Health, c.state.Reason = h, reason
	if h != Running {
		c.state.PID = 0
	}
}

// Close stops the helper (EOF on its stdin, then SIGKILL if it lingers).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.p != nil {
		c.p.stop(c.cfg.Grace)
		c.p = nil
	}
	c.setState(Stopped, "closed")
	return nil
}

// Hello asks the helper who it is.
func (c *Client) Hello(ctx context.Context, timeout time.Duration) (wire.Hello, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpHello}, timeout)
	if err != nil {
		return wire.Hello{}, err
	}
	return *a.Hello, nil
}

// Ports lists the local CA ports libibumad sees.
func (c *Client) Ports(ctx context.Context, timeout time.Duration) ([]wire.LocalPort, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpPorts}, timeout)
	if err != nil {
		return nil, err
	}
	return a.Ports, nil
}

// Peer asks who is at the other end of a local port.
func (c *Client) Peer(ctx context.Context, l wire.Local, timeout time.Duration) (wire.Peer, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpPeer, Local: &l}, timeout)
	if err != nil {
		return wire.Peer{}, err
	}
	return *a.Peer, nil
}

// PeerNode asks only the neighbour's NodeInfo (one SMP): its GUIDs, type
// and the port the cable plugs into, to confirm a known peer.
func (c *Client) PeerNode(ctx context.Context, l wire.Local, timeout time.Duration) (wire.Peer, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpPeerNode, Local: &l}, timeout)
	if err != nil {
		return wire.Peer{}, err
	}
	return *a.Peer, nil
}

// ClassPortInfo asks the PMA at lid what it offers.
func (c *Client) ClassPortInfo(ctx context.Context, l wire.Local, lid int, timeout time.Duration) (wire.ClassPortInfo, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpClassPortInfo, Local: &l, LID: lid}, timeout)
	if err != nil {
		return wire.ClassPortInfo{}, err
	}
	return *a.CPI, nil
}

// NodeInfo asks which node answers at lid (one LID-routed SMP).
func (c *Client) NodeInfo(ctx context.Context, l wire.Local, lid int, timeout time.Duration) (wire.Node, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpNodeInfo, Local: &l, LID: lid}, timeout)
	if err != nil {
		return wire.Node{}, err
	}
	if a.Node == nil {
		return wire.Node{}, fmt.Errorf("%s: answered without a node", describeOp(wire.Request{Op: wire.OpNodeInfo, Local: &l, LID: lid}))
	}
	return *a.Node, nil
}

// PortCounters reads PortCounters of port at lid.
func (c *Client) PortCounters(ctx context.Context, l wire.Local, lid, port int, timeout time.Duration) (wire.PortCounters, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpPortCounters, Local: &l, LID: lid, PortNum: port}, timeout)
	if err != nil {
		return wire.PortCounters{}, err
	}
	return *a.Counters, nil
}

// PortCountersExt reads PortCountersExtended of port at lid, with the
// 64-bit error counters when withErrors (ClassPortInfo.ExtendedErrors).
func (c *Client) PortCountersExt(ctx context.Context, l wire.Local, lid, port int, withErrors bool, timeout time.Duration) (wire.PortCountersExt, error) {
	a, err := c.do(ctx, wire.Request{Op: wire.OpPortCountersExt, Local: &l, LID: lid, PortNum: port, ExtErrors: withErrors}, timeout)
	if err != nil {
		return wire.PortCountersExt{}, err
	}
	return *a.Ext, nil
}

// do runs one request: starting the helper if it is due, then a line out
// and a line back within timeout + grace.
func (c *Client) do(ctx context.Context, req wire.Request, timeout time.Duration) (wire.Answer, error) {
	if timeout <= 0 || timeout > wire.MaxTimeout*time.Millisecond {
		return wire.Answer{}, fmt.Errorf("%s: timeout %v outside (0, %d ms]", req.Op, timeout, wire.MaxTimeout)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return wire.Answer{}, ErrClosed
	}
	if c.p == nil {
		if err := c.start(ctx); err != nil {
			return wire.Answer{}, err
		}
	}
	a, err := c.roundTrip(ctx, req, timeout)
	if err != nil {
		return wire.Answer{}, err
	}
	if a.Err != nil {
		return wire.Answer{}, a.Err
	}
	return a, nil
}

// roundTrip sends req and reads its answer; any failure but an answered
// error loses the helper.
func (c *Client) roundTrip(ctx context.Context, req wire.Request, timeout time.Duration) (wire.Answer, error) {
	c.nextID++
	req.ID = c.nextID
	req.TimeoutMS = int(timeout.Milliseconds())
	if req.TimeoutMS == 0 {
		req.TimeoutMS = 1
	}
	line, err := wire.Encode(req)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("%s: %w", req.Op, err)
	}
	deadline := time.Now().Add(timeout + c.cfg.Grace)
	a, err := c.p.exchange(ctx, line, deadline)
	if err == nil && a.ID != req.ID {
		err = fmt.Errorf("answered request %d to request %d", a.ID, req.ID)
	}
	if err != nil {
		if ctx.Err() != nil {
			// The daemon is stopping: not the helper's fault.
			c.p.stop(0)
			c.p = nil
			return wire.Answer{}, fmt.Errorf("%s: %w", req.Op, ctx.Err())
		}
		reason := c.lose(fmt.Sprintf("%s: %v", describeOp(req), err))
		return wire.Answer{}, fmt.Errorf("%w: %s", ErrLost, reason)
	}
	if fails, lasted := c.ep.Recovered(); fails > 0 {
		c.cfg.Log.Info("nichealth-mad answers again", "failures", fails, "after", lasted)
	}
	c.setState(Running, "")
	return a, nil
}

func describeOp(req wire.Request) string {
	switch {
	case req.Local == nil:
		return req.Op
	case req.Op == wire.OpPeer || req.Op == wire.OpPeerNode:
		return fmt.Sprintf("%s of %s", req.Op, localName(*req.Local))
	default:
		return fmt.Sprintf("%s of LID %d port %d from %s", req.Op, req.LID, req.PortNum, localName(*req.Local))
	}
}

func localName(l wire.Local) string {
	if l.GUID != "" {
		return "port GUID " + l.GUID
	}
	return fmt.Sprintf("%s port %d", l.CA, l.Port)
}
