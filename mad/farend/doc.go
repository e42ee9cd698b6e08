// Package farend reads the far end of every ACTIVE InfiniBand port: the
// node at the other end of the cable, found by directed-route SMPs, and
// its port's PMA counters, through the supervised MAD helper
// (package mad). It runs on a goroutine of its own: the poll loop hands
// it the ports to watch (SetTargets, only when they change) and takes the
// latest immutable PeerReading it published (Latest, an atomic load), so no
// poll ever waits on the helper or the fabric.
//
// Each port is matched to its MAD port by its port GUID (the helper finds
// the CA and port that carries it), never by name. Every interval each
// peer is found again and its counters are read once; a port whose state
// changed is found again at once, so a recabled port follows its new
// peer, and counters are never read twice within an interval (a rate over
// a few milliseconds would make noise of one error). Peers are named by
// the infiniband-diags node-name map when it names them. Nothing here
// judges: checks/farend does.
package farend
