// Package delivery moves each sink's events out of the outbox: in order,
// batched where the seeds allow it, with backoff while the destination is
// away, isolating and parking the events it rejects as invalid, and
// saving the sink's delivery position; a panic in the sink's own code
// stops its drainer and is reported, never ends the daemon.
package delivery
