// Package observe is what nichealthd looks at and when: discovery and role
// classification (the one classification, nicInclusionRegexOverride
// included), the read plan built from them, the deadline-bounded reads
// through topology/reader (hung reads, parked files), the cadences (the
// state poll, the 1 s counter tick, the PCIe AER read, the link sanity
// pass, the PCI inventory's scan), the RoCE netdevs and their driver
// statistics, the kernel log's reader (topology/kmsg), and, for every
// cycle, one Observation: the device set, each monitored port's typed
// state, rate and operstate, counter samples, read outcomes, AER
// readings, the inventory's scan and the kernel log's new records. It
// judges nothing; the checks (package checks and below) do.
//
// Every step runs inside the checks' panic boundary (Boundary), so a bug
// in the code that reads for one check disables that check alone.
package observe
