// Package sim builds a fake Linux host directory (sys, proc, dev and the
// NVSentinel GPU metadata file) for named GPU node shapes and injects faults
// into it, so the daemon, its tests, its benchmarks and the demo all run
// against the same realistic sysfs layout (DESIGN.md section 8).
//
// A built tree records itself in H/.nichealth-sim.json, so Open (or the
// nichealth-sim command in another process) can keep mutating it. Every
// mutation replaces files atomically (temporary file under H/.tmp and a
// rename), because the daemon may be reading the tree at the same moment.
// Files built with equal content share an inode unless
// BuildOptions.PrivateFiles is set: change the tree through Host methods,
// never by writing into a file in place.
package sim
