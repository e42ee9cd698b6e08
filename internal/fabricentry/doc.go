// Package fabricentry is what an entry of a fabric assignment may hold
// (DESIGN.md section 14): the switch port numbers, LIDs and names, and how
// many entries one host reads. nichealth-fabric plan, which writes the
// entries, and the daemon, which reads them, both ask this package, so a
// plan never holds an entry a daemon refuses.
package fabricentry
