// Package reader reads many small sysfs attribute files per poll cycle,
// cheaply and safely. On real sysfs it keeps each file open and re-reads it
// with pread at offset 0 (sysfs regenerates the value on every such read);
// elsewhere (a simulated host on tmpfs, whose files are replaced by rename)
// it opens each file afresh. Every read has a deadline: a read that hangs in
// the kernel (a dying HCA's firmware command) marks only that file stuck,
// and the cycle completes without it. A file that fails with EINVAL, EIO,
// EOPNOTSUPP, EACCES or EPERM three times in a row is parked: not opened
// again until its re-probe (ErrParked, park.go).
package reader
