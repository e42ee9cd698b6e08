// Package runner runs the checks: it drives the observer (package observe)
// once per cycle and calls each check of its list (package checks'
// contract) in a fixed order on the observation, each inside the panic
// boundary (guard.go): a panic in a check's code disables that check alone
// until the next reload or restart, raises a visible check-failed
// condition, and the others keep polling. It keeps the checks' memory as
// the state file's sections, replays the outbox onto them after a crash,
// restores the health model, and builds what the views show of each port.
// The daemon (package daemon) decides when a cycle runs and where its
// events go; `nichealthctl check` runs one cycle with no daemon, as its
// first poll after a restart would (AsRestarted).
//
// Adding a check is its own package implementing checks.Check (and
// checks.Memory when it remembers) plus one line in the list (list.go).
package runner
