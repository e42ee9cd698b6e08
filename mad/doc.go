// Package mad runs nichealth-mad, the helper that speaks MADs through
// rdma-core's C libraries, as a supervised child of the daemon, and is the
// daemon's only way to it (protocol: package wire).
//
// A Client sends one request at a time and waits for its answer at most
// the request's timeout plus a grace: a helper that overruns it is killed
// (SIGKILL) and started again on a later request after a backoff that
// doubles up to a cap (internal/backoff); one that exits, or says
// something the protocol does not allow, is treated the same. Answers are
// bounded by the protocol's line limit and validated before they are
// returned. State says how the helper is doing (running, restarting after
// a crash or a hang, or unavailable: not installed, its libraries
// missing), so the daemon can raise it as a monitoring condition and clear
// it when the helper answers again. Nothing here may run on the poll loop:
// callers use it from a goroutine of their own.
package mad
