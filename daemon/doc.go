// Package daemon is nichealthd's lifecycle: start-up (start.go: the
// configuration, the state file, the outbox's replay onto the checks and
// the health model, the first discovery), the poll loop (run.go), the
// commit of each cycle's condition changes (commit.go: outbox first, then
// the health model, then the state file), reload (reload.go), the sink
// set (package sinkset runs the sinks, package delivery moves each one's
// events out of the outbox) and the views' wiring (bus.go, metricsrc.go,
// watch.go). What is observed and how it is judged is checks/runner's:
// observe reads the host, each check judges, and the daemon only commits
// what they say.
//
// A sink's delivery runs inside a boundary like a check's step (guard.go):
// a panic there stops that sink alone until the next reload or restart and
// raises check-failed, while the rest of the node stays monitored. The
// package reads only the real host: what a test needs the kernel to say
// otherwise is passed in as Seams at construction.
package daemon
