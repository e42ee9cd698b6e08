// Package regularfile reads a file that someone else may have replaced
// with something that is not one: a FIFO would block the read forever, a
// link to /dev/zero would exhaust memory. It reads regular files only, up
// to a size limit, without ever blocking on the open.
package regularfile
