// Package daemon is nichealthd's lifecycle: when to look (the poll loop),
// what to look at (the read plan built from discovery and roles), where
// events go (outbox first, then every sink), and how configuration changes
// are applied without losing counter windows or latched breaches.
//
// Every step of a check and every sink's delivery runs inside a boundary
// (guard.go): a panic there disables that check or sink alone until the
// next reload or restart and raises check-failed, while the rest of the
// node stays monitored. The package reads only the real host: what a test
// needs the kernel to say otherwise is passed in as Seams at construction.
package daemon
