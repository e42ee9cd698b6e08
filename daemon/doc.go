// Package daemon is nichealthd's lifecycle: when to look (the poll loop),
// what to look at (the read plan built from discovery and roles), where
// events go (outbox first, then every sink), and how configuration changes
// are applied without losing counter windows or latched breaches.
package daemon
