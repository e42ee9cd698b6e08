// Package hangfs is test support: a FUSE filesystem that passes every
// operation through to a directory and, on command, leaves reads or
// writes of regular files hanging in the kernel, as a hung NFS server or
// a wedged disk does. It is the honest test of "nothing on the poll loop
// waits on a file outside sysfs": a FIFO cannot stand in for a regular
// file (the daemon refuses FIFOs), and a hung network filesystem is what
// the field has. Mounting needs root and /dev/fuse; without them a test
// reports the missing component (internal/component).
package hangfs
