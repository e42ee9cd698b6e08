package readcore

import (
	"context"
	"time"

	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/wire"
)

// CounterClient is what reading a PMA's counters asks of the helper
// (*mad.Client).
type CounterClient interface {
	PortCounters(ctx context.Context, l wire.Local, lid, port int, timeout time.Duration) (wire.PortCounters, error)
	PortCountersExt(ctx context.Context, l wire.Local, lid, port int, withErrors bool, timeout time.Duration) (wire.PortCountersExt, error)
}

// Client is what both readers ask of the helper (*mad.Client): a PMA's
// offer and counters, the helper's state, and its end. Each reader's own
// client adds how it finds what it reads.
type Client interface {
	CounterClient
	ClassPortInfo(ctx context.Context, l wire.Local, lid int, timeout time.Duration) (wire.ClassPortInfo, error)
	State() mad.State
	Close() error
}

// Counters is one read of a port's PMA counters.
type Counters struct {
	// PortCounters holds every counter; its data counters are the 64-bit
	// ones whenever the PMA offers PortCountersExtended.
	wire.PortCounters
	// Wide says the error counters came from PortCountersExtended too
	// (64-bit: they never saturate).
	Wide bool
	// Ext is PortCountersExtended when the PMA offers it (HasExt). A
	// value, not a pointer: a reader that keeps only the counters (the
	// fabric share, 10,000 ports a round) allocates nothing for it.
	Ext    wire.PortCountersExt
	HasExt bool
}

// CounterError is a failed counter read: Extended says whether
// PortCountersExtended (rather than PortCounters) failed, so the reader
// names the request that did.
type CounterError struct {
	Extended bool
	Err      error
}

func (e *CounterError) Error() string { return e.Err.Error() }
func (e *CounterError) Unwrap() error { return e.Err }

// ReadCounters reads the counters of port at lid, by what cpi (its PMA's
// ClassPortInfo) offers, in one GMP where it can: PortCountersExtended
// whenever offered (PortCounters' 32-bit data counters saturate in a
// second at HDR), with the error counters when it carries them; else
// PortCounters too, with the 64-bit data counters spliced in. A failure is
// a *CounterError.
func ReadCounters(ctx context.Context, c CounterClient, local wire.Local, cpi wire.ClassPortInfo, lid, port int, timeout time.Duration) (Counters, error) {
	var ext wire.PortCountersExt
	if cpi.Extended() {
		x, err := c.PortCountersExt(ctx, local, lid, port, cpi.ExtendedErrors(), timeout)
		if err != nil {
			return Counters{}, &CounterError{Extended: true, Err: err}
		}
		if x.Errors != nil {
			return Counters{PortCounters: *x.Errors, Wide: true, Ext: x, HasExt: true}, nil
		}
		ext = x
	}
	pc, err := c.PortCounters(ctx, local, lid, port, timeout)
	if err != nil {
		return Counters{}, &CounterError{Err: err}
	}
	if cpi.Extended() {
		pc.PortXmitData, pc.PortRcvData, pc.PortXmitPkts, pc.PortRcvPkts = ext.PortXmitData, ext.PortRcvData, ext.PortXmitPkts, ext.PortRcvPkts
	}
	return Counters{PortCounters: pc, Ext: ext, HasExt: cpi.Extended()}, nil
}
