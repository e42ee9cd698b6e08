// Package farend is the far-end check (InfiniBandFarEndCheck, DESIGN.md
// section 13; the classic health check's "Remote errors check"): it judges
// what the switch port at the other end of each InfiniBand cable counts,
// as mad/farend last read it, as the near end is judged: each counter
// by the counter table's threshold of the same counter and the local
// counters' window rule (checks/counters' Slide: per second over the real
// time between two reads, per minute over at least a minute, per hour only
// over a full hour of reads, sliding, never extrapolated). Errors the
// switch counts on what it receives from us are our transmitter, optic or
// cable failing, which nothing in our own sysfs shows.
//
// A breach is a non-fatal condition on the local port (error code
// peer:<counter>, the peer in its metadata, the slides' Nagios wording
// then the rule and window in its message), latched until the switch's
// counter goes back (cleared on the fabric side), the port is cabled to
// another peer, or an operator acknowledges it (nichealthctl ack DEV PORT
// peer:<counter>); a congestion row (PortXmitWait, switched on) is no
// latch, as locally: it clears once a full window is below half of it. A field stuck at its width's maximum is its own
// visibility-lost condition (peer-saturated:<field>, acknowledgeable, its
// fix the fabric team's perfquery -R). A peer link-down or link-recovery
// increase across a local episode of the same port (its link down, its
// device gone: a driver reload, a lost-function hold) is that episode seen
// from the switch: one healthy event carrying the witness, no latch. A
// port whose peer changes three times within an hour is one
// peer:unstable finding. A MAD helper that crashed or hung is a
// node-level monitoring condition until it answers again; a host that
// cannot read the far end at all (no umad device, no libraries) is said
// once in the log, not a condition: nothing is wrong with its NICs.
//
// The check judges a reading once, when its generation moves: a steady
// cycle allocates nothing.
package farend
