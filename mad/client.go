package mad

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/mad/wire"
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

// lose kills the helper after a failed exchange, records why and when it
// may be started again, and returns the reason.
func (c *Client) lose(what string) string {
	status, tail := c.p.stop(0)
	c.p = nil
	reason := "nichealth-mad " + what
	if status != "" {
		reason += "; " + status
	}
	if tail != "" {
		reason += "; its last words: " + tail
	}
	c.backOff(Restarting, reason)
	return reason
}

func (c *Client) backOff(h Health, reason string) {
	first, wait := c.ep.Fail()
	if h == Unavailable {
		wait = c.cfg.MaxBackoff
	}
	c.notBefore, c.lastWait = time.Now().Add(wait), wait
	c.setState(h, reason)
	if h == Unavailable {
		// Nothing will change until someone installs something: the
		// caller says it once, with the fix.
		c.cfg.Log.Debug("nichealth-mad cannot run here", "reason", reason, "retryIn", wait)
		return
	}
	if ok, n := c.logs.Note(reason, time.Now()); ok || first {
		c.cfg.Log.Warn("nichealth-mad failed; it is started again after a backoff", "reason", reason, "retryIn", wait.Round(time.Millisecond), "suppressed", n)
	}
}

// start runs the helper and checks it answers hello.
func (c *Client) start(ctx context.Context) error {
	if wait := time.Until(c.notBefore); wait > 0 {
		st := c.State()
		return fmt.Errorf("%w (%s; next attempt in %v): %s", ErrNotRunning, st.Health, wait.Round(time.Second), st.Reason)
	}
	p, err := launch(c.cfg)
	if err != nil {
		h := Restarting
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			h = Unavailable
			err = fmt.Errorf("%w (install the nichealthd package, or set [mad] helper to its path)", err)
		}
		c.backOff(h, "nichealth-mad cannot be started: "+err.Error())
		return fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	c.p = p
	c.nextID++
	line, _ := wire.Encode(wire.Request{ID: c.nextID, Op: wire.OpHello})
	a, err := p.exchange(ctx, line, time.Now().Add(c.cfg.StartTimeout))
	if err == nil && (a.Hello == nil || a.ID != c.nextID) {
		err = fmt.Errorf("answered hello with %+v", a)
	}
	if err == nil && a.Hello.Version != wire.Version {
		err = fmt.Errorf("speaks protocol version %d, this daemon %d (install nichealthd and nichealth-mad from one package)", a.Hello.Version, wire.Version)
	}
	if err != nil && ctx.Err() != nil {
		// The caller gave up (the daemon stopping, a reader
		// reconfigured) while the helper was still starting: not the
		// helper's failure, so no backoff; the next request starts it.
		p.stop(0)
		c.p = nil
		return fmt.Errorf("start nichealth-mad: %w", ctx.Err())
	}
	if err != nil {
		status, tail := p.stop(0)
		c.p = nil
		reason := fmt.Sprintf("nichealth-mad (%s) did not start: %v", c.cfg.Path, err)
		if status != "" {
			reason += "; " + status
		}
		h := Restarting
		if strings.Contains(tail, "error while loading shared libraries") {
			h = Unavailable
			reason += "; " + tail + " (install rdma-core's MAD libraries: apt-get install libibumad3 libibmad5)"
		} else if tail != "" {
			reason += "; its last words: " + tail
		}
		c.backOff(h, reason)
		return fmt.Errorf("%w: %s", ErrNotRunning, reason)
	}
	c.stateMu.Lock()
	c.state.Starts++
	c.state.PID = p.cmd.Process.Pid
	c.stateMu.Unlock()
	c.cfg.Log.Debug("nichealth-mad started", "pid", p.cmd.Process.Pid, "helper", a.Hello.Helper)
	return nil
}
