// Package mad is the node's InfiniBand management-datagram side: what is
// read by MAD rather than from the host's own files. The room holds:
//
//   - mad (this package): the supervised client of nichealth-mad, the
//     helper that carries rdma-core's C libraries;
//   - mad/wire: the helper's protocol (JSON lines, bounds, validation);
//   - mad/readcore: the core both readers run on (their goroutine,
//     configuration, publication and close, the lines said once, the umad
//     check, the extended-counters read);
//   - mad/farend: the far-end reader, the peer switch port of every local
//     ACTIVE InfiniBand port (PeerReader), which checks/farend judges;
//   - mad/fabricshare: the fabric-share reader, the switch ports
//     nichealth-fabric plan assigned to this host (ShareReader), exported
//     to /metrics only.
//
// It is a room of its own, beside topology on the ground floor, rather
// than under topology: topology is what RDMA hardware is on this host,
// and a switch port at the far end of a cable or a list of the fabric's
// switch ports is not. It imports only internal/ and its own tree;
// observe, the checks and the daemon import it. Each reader runs its own
// helper process (the daemon's madReaders owns both).
//
// This package runs nichealth-mad as a supervised child of the daemon and
// is the daemon's only way to it (protocol: package wire).
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
