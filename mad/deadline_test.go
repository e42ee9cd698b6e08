package mad

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// TestClient_40_12_EveryCallReturnsByItsDeadline: against a helper that
// greets and then never answers, every operation returns by its timeout
// plus the grace (with a margin for killing and reaping the helper), as
// ErrLost: a hung helper never holds the far-end or fabric reader past
// its budget. Each operation gets its own client, so none is refused
// early by the backoff of another's hang.
func TestClient_40_12_EveryCallReturnsByItsDeadline(t *testing.T) {
	const timeout = 150 * time.Millisecond
	ops := map[string]func(c *Client) error{
		"ports":         func(c *Client) error { _, err := c.Ports(context.Background(), timeout); return err },
		"peer":          func(c *Client) error { _, err := c.Peer(context.Background(), local, timeout); return err },
		"peernode":      func(c *Client) error { _, err := c.PeerNode(context.Background(), local, timeout); return err },
		"classportinfo": func(c *Client) error { _, err := c.ClassPortInfo(context.Background(), local, 3, timeout); return err },
		"nodeinfo":      func(c *Client) error { _, err := c.NodeInfo(context.Background(), local, 3, timeout); return err },
		"portcounters": func(c *Client) error {
			_, err := c.PortCounters(context.Background(), local, 3, 1, timeout)
			return err
		},
		"portcountersext": func(c *Client) error {
			_, err := c.PortCountersExt(context.Background(), local, 3, 1, true, timeout)
			return err
		},
	}
	for name, call := range ops {
		t.Run(name, func(t *testing.T) {
			cfg := fake(t, "hang")
			cfg.MinBackoff, cfg.MaxBackoff = time.Hour, time.Hour
			c := New(cfg)
			defer c.Close()
			// The helper's start and hello are not the call's budget: it
			// is started first.
			if _, err := c.Hello(context.Background(), time.Second); err != nil {
				t.Fatalf("hello: %v", err)
			}
			bound := timeout + cfg.Grace + 2*time.Second
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- call(c) }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrLost) {
					t.Fatalf("%s against a silent helper: %v, want ErrLost", name, err)
				}
				if took := time.Since(start); took < timeout {
					t.Fatalf("%s gave up after %v, before its timeout %v", name, took, timeout)
				}
			case <-time.After(bound):
				t.Fatalf("%s still waiting %v after it was sent (timeout %v, grace %v)", name, bound, timeout, cfg.Grace)
			}
		})
	}
	// The budget the daemon may ask is the one the wire carries.
	c := New(fake(t, "ok"))
	defer c.Close()
	if _, err := c.PortCounters(context.Background(), local, 3, 1, wire.MaxTimeout*time.Millisecond+time.Millisecond); err == nil {
		t.Fatal("a timeout the wire cannot carry was sent")
	}
}
