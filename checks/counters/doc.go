// Package counters decides what a port's error counters mean: it holds the
// counter table of seed section 10.2 (with its TOML overrides and their
// validation) and the evaluator of seed section 10.4, which turns one
// counter reading at a time into breach, recovery, baseline and saturation
// events while keeping the persisted snapshots and latched breaches.
//
// The package does no I/O on the hot path: the daemon reads the files (see
// PlanFor and Files for what to read) and hands each reading to
// Evaluator.Evaluate, which does not allocate unless it emits an event.
package counters
