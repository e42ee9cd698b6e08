// Package rules runs the seeds' analyzer rules on the node (DESIGN.md
// difference 8): NICLinkFlapRule (seed state 6.3, RepeatedNICLinkFlap: 3
// or more link-down episodes within 10 minutes on one port is fatal,
// REPLACE_VM, held until the port has been stable for a stabilization
// window), NICPortDropRule (seed state 6.2, NICPortDrop: DOWN for 4
// minutes with no link_downed change is fatal) and NICDegradationRule
// (NVSentinel's RepeatedNICDegradation: 3 non-fatal events on one port
// within an hour escalate to CONTACT_SUPPORT).
//
// The engine is pure: it is given each cycle's port readings and the
// health model's active non-fatal conditions (as plain values: checks sit
// below checks/health in the data flow), and returns the conditions it raises
// and clears. Its windows are a State value the caller persists with the
// rest of the daemon's state; a State from another boot is discarded, so
// the windows clear on reboot as the counter windows do.
package rules
