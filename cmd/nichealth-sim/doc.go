// Command nichealth-sim builds a simulated GPU node's sysfs/procfs tree for
// nichealthd and injects faults into it from the shell: the same mechanism
// the tests and the README demo use (package topology/sim).
//
//	nichealth-sim build --shape dgx-h100 --root /tmp/h
//	nichealth-sim port-state --root /tmp/h mlx5_0 1 DOWN Disabled
//
// Every error exits 2 with one line on stderr.
package main
