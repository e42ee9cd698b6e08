// Package reader reads many small sysfs attribute files per poll cycle,
// cheaply and safely. On real sysfs it keeps each file open and re-reads it
// with pread at offset 0 (sysfs regenerates the value on every such read);
// elsewhere (a simulated host on tmpfs, whose files are replaced by rename)
// it opens each file afresh. Every read has a deadline: a read that hangs in
// the kernel (a dying HCA's firmware command) marks only that file stuck,
// and the cycle completes without it. A file that fails with EINVAL, EIO,
// EOPNOTSUPP, EACCES or EPERM three times in a row is parked: not opened
// again until its re-probe (ErrParked, park.go).
//
// Whether a descriptor is kept follows where the file is: the Reader's
// policy, or a file's own (File.SetKeepOpen) when one plan mixes trees (a
// RoCE netdev's class/net files are sysfs on every real host). A kept
// descriptor whose pread fails (the device was removed) is released and the
// file reopened by path once; a failure is reported, never a stale value.
// A driver call (Source) that panics on the worker's goroutine becomes a
// *PanicError for its caller's boundary instead of ending the process. The
// only stand-in for the kernel is a Faults passed at construction (tests).
package reader
