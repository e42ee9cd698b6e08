// Package iblab runs a real InfiniBand fabric lab on one machine: the
// tests' fabric (with infiniband-diags as their oracle), and the fabric
// behind the simulated node of the demo (make run) and of make try, which
// keeps its lab running after it returns (Options.Keep, Detach) and lets
// nichealth-sim farend drive it from another process (Attach). ibsim (Debian's ibsim-utils) simulates the fabric of an
// ibnetdiscover output, a real opensm attached to one of its hosts through
// the umad2sim preload assigns LIDs and routes, and any program run with
// the lab's environment (Env) speaks MADs as a chosen host: its libibumad
// calls reach the simulator instead of the kernel. infiniband-diags'
// tools (perfquery, smpquery, saquery, ibstat) run the same way and are
// the tests' oracle.
//
// Each lab has its own IBSIM_SOCKNAME (abstract unix sockets) and working
// directory, so labs run side by side. The console drives faults:
// PerformanceSet on a port's counters, Unlink and ReLink of cables, X to
// free the client slot a killed program held (ibsim has 10 and frees one
// only when its client says goodbye). Stop and Cont freeze the whole
// fabric. A missing tool is reported through internal/component (a skip
// here, a failure under CI).
//
// Two limits of the simulator shape the tests: its SA answers only
// single-packet queries (no RMPP), so peers are found by directed route;
// and a program must not attach while ibsim is stopped and be killed
// before it is continued: ibsim then handles the dead program's
// handshake, cannot reach it, and panics.
package iblab
