// Package residency keeps a long-running process's resident set to the
// code it runs. Start-up touches code that never runs again (flag and
// TOML parsing, discovery, the first poll's once-only paths), and the
// kernel's read-ahead and fault-around map pages the process never
// touches at all; their file-backed pages stay in the resident set and are
// charged to the unit's memory cgroup for as long as the process lives.
// Release advises the kernel that the executable's mappings are read at
// random and reclaims their pages once; what the daemon then runs faults
// back in page by page.
package residency
