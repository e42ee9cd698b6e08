// Package fabricshare reads this node's share of the fabric's switch
// ports (DESIGN.md section 14): the list nichealth-fabric plan assigned to
// this host, one file per host, and the PMA counters of every port on it,
// through the supervised MAD helper (package mad).
//
// It runs on a goroutine of its own and publishes an immutable ShareReading
// (Latest, an atomic load): nothing the poll loop or /metrics does waits
// on the file, the helper or the fabric. The reads of one interval are
// spread evenly across it, so a list of 10,000 ports is a steady trickle
// of MADs, never a burst. A switch is addressed by the port 0 LID the
// plan wrote; one LID-routed NodeInfo per switch per interval checks the
// LID still belongs to the planned GUID before any PMA Get goes there.
//
// The assignment file is watched (its directory, so a rename-over is
// seen) and read again when it changes and on every reload; a file that
// fails validation is refused with its reason and the list in force is
// kept. Nothing here judges: a fabric port is not this node's condition,
// so its counters go only to /metrics for the fleet's rules.
package fabricshare
