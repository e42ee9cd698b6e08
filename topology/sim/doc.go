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
//
// What a directory cannot make the kernel say (an errno on a chosen file,
// mlx5 driver statistics) the simulator keeps beside the tree
// (ErrnoTableName, PHYStatsDir) and hands out as seams: NewErrnoTable is a
// reader.Faults and PHYStatsOpener stands in for the ethtool ioctl. The
// daemon uses them only when given them at construction (its tests) or in
// the simulate build (nichealthd -tags simulate --simulate-root H); the
// production daemon never looks for them, so on a simulator tree it reads
// exactly as on a real host.
package sim
