// Package rules runs the seeds' analyzer rules on the node (DESIGN.md
// differences 8 and 15), under the seeds' names and numbers:
// RepeatedNICLinkFlap (seed state 6.3: 3 or more link-down episodes within
// 10 minutes on one port is fatal, REPLACE_VM, held until the port has
// been stable for a stabilization window), NICPortDrop (seed state 6.2:
// DOWN for 4 minutes with no link_downed change is fatal) and
// RepeatedNICDegradation (seed counter 1.4 and 3.1: 5 or more non-fatal
// degradation events of one port within 24 hours is fatal; the caller
// passes only the port's own state and counter conditions).
//
// The engine is pure: it is given each cycle's port readings and the
// health model's active non-fatal conditions (as plain values: checks sit
// below checks/health in the data flow), and returns the conditions it raises
// and clears. Its windows are a State value the caller persists with the
// rest of the daemon's state; a State from another boot is discarded, so
// the windows clear on reboot as the counter windows do.
package rules
