// Package readcore is what the two MAD readers share (mad/farend, the far
// end of the node's own cables; mad/fabricshare, this host's share of the
// fabric's switch ports): a reader's life (its goroutine, started once and
// ended by Close, which also ends its helper), its configuration applied
// at once (Configure wakes the goroutine), its publication (an atomic
// pointer to an immutable reading, Latest never nil, so no poll and no
// scrape waits on the helper or the fabric), the lines said once per
// process, the host's umad check, and the one way a PMA's counters are
// read (PortCountersExtended when offered, else PortCounters with the
// 64-bit data counters spliced in).
//
// The readers keep what differs: what they read, in which order, at what
// pace. The core is generic over their configuration and reading, so
// neither converts anything to share it.
package readcore
