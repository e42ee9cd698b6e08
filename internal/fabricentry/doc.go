// Package fabricentry is the fabric assignment file (DESIGN.md section
// 14): its JSON shape (File, Plan, Entry), and what an entry may hold
// (the switch port numbers, LIDs and names, and how many entries one
// host reads). nichealth-fabric plan, which writes the file, and the
// daemon, which reads it, both ask this package, so a plan never writes
// a key a daemon does not read nor an entry a daemon refuses.
package fabricentry
