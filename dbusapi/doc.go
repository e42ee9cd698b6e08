// Package dbusapi publishes the daemon's view of every monitored NIC port on
// the system bus as org.nichealth.NicHealth1 (DESIGN.md section 5), and holds
// the matching Client that nichealthctl uses. One table per interface drives
// export, property access, change signals and the introspection XML, so what
// busctl shows is exactly what is served; API.md is the reference.
package dbusapi
