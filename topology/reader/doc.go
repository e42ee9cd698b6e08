// Package reader reads many small sysfs attribute files per poll cycle,
// cheaply and safely. On real sysfs it keeps each file open and re-reads it
// with pread at offset 0 (sysfs regenerates the value on every such read);
// elsewhere (a simulated host on tmpfs, whose files are replaced by rename)
// it opens each file afresh. Every read has a deadline: a read that hangs in
// the kernel (a dying HCA's firmware command) marks only that file stuck,
// and the cycle completes without it.
package reader
