// Package sinkset runs the daemon's event destinations as one set: it
// opens each sink the configuration names (the journal, a JSON-lines
// file, the platform connector) plus those the daemon adds, starts one
// delivery drainer per sink over the outbox, reopens their files for
// logrotate, and stops them within a bound so that a write hung in the
// kernel never keeps the daemon from exiting. A reload that changes a
// [sinks.*] key replaces the set whole, off the poll loop and retried
// with backoff; what a sink has not delivered waits in the outbox.
//
// Package delivery moves one sink's events; package sink defines a sink
// and holds the destinations. The daemon owns the health side of a sink
// (a panic's check-failed condition) and hears of it through Options.
package sinkset
