// Package persist owns the daemon's one state file (seed section 6.6): it
// loads it defensively, discards it when the host has rebooted (seed 6.5),
// and saves it atomically and durably, only when it changed. Its
// crash-safe file replacement (WriteFileAtomic, SyncDir) also serves the
// outbox's cursor files in persist/outbox. Peek and PeekCrossBoot read
// the same files for someone who must change nothing (nichealthctl check
// with the daemon down).
//
// Order of commits, each poll: append the poll's events to the outbox
// (fsynced), then save the state that produced them. A crash between the
// two re-detects the crossing on restart instead of losing its event.
package persist
