// Package dbusapi publishes the daemon's view of every monitored NIC port on
// the system bus as org.nichealth.NicHealth1 (DESIGN.md section 5), and holds
// the matching client that nichealthctl uses. One set of tables describes
// each interface; export, property access, change signals and introspection
// XML are all generated from it, so what busctl shows is what is served.
package dbusapi
