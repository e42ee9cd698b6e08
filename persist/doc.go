// Package persist owns the daemon's one state file (seed section 6.6): it
// loads it defensively, discards it when the host has rebooted (seed 6.5),
// and saves it atomically and durably, only when it changed. The daemon
// must append the events a poll produced to the outbox (package
// persist/outbox) before it saves the state that produced them, so a crash
// between the two re-detects the crossing instead of losing its event.
package persist
