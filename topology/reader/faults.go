package reader

import "golang.org/x/sys/unix"

// Faults stands in for the kernel where a test needs a read to fail in a
// way a regular file on a temporary directory cannot (EIO, EINVAL, EACCES:
// what a restricted or failing mlx5 function returns). The daemon built
// for production passes none, so no read of a real host ever goes through
// one; tests pass one at construction (Options.Faults), and the
// simulator's errno table (topology/sim.ErrnoTable) is one, compiled into
// nichealthd only by the simulate build tag.
type Faults interface {
	// Refresh is called once at the start of every Read, on the caller's
	// goroutine, while no lookup runs: a table kept in a file is re-read
	// there.
	Refresh()
	// Lookup returns the errno the read of path must fail with. It runs on
	// the reading goroutine after the real read, so the file was really
	// opened (opens stay countable) and only its outcome is replaced.
	Lookup(path string) (unix.Errno, bool)
}
