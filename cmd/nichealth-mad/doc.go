// Command nichealth-mad reads the InfiniBand fabric for nichealthd through
// rdma-core's libibumad and libibmad: the node at the other end of a local
// port (directed-route SMPs: NodeInfo, NodeDescription, PortInfo), the
// node that answers at a LID (a LID-routed NodeInfo) and a port's PMA
// counters (ClassPortInfo, PortCounters, PortCountersExtended).
// It only reads: it sends no Set of any class, so it never clears a
// switch's counters (they belong to the fabric's operators).
//
// The libraries are C, so this small program carries them and nichealthd
// stays a static Go binary that runs it as a supervised child (package
// mad): a hang or a crash in a library is a condition of the
// daemon, not an outage.
//
// # Protocol
//
// One JSON object per line each way (package mad/wire): a request
// on stdin, its answer on stdout, one at a time. Every request carries an
// id, which its answer repeats, and a budget in milliseconds for the MADs
// it sends; lines are at most 16 KiB. For example:
//
//	→ {"id":3,"op":"peer","timeoutMs":2000,"local":{"guid":"0x0002c90300a0b011"}}
//	← {"id":3,"peer":{"nodeGuid":"0x...","portGuid":"0x...","nodeType":2,"numPorts":41,"port":17,"lid":9,"description":"ibsw-leaf3","state":4,"physState":5}}
//	→ {"id":4,"op":"portcounters","timeoutMs":2000,"local":{"ca":"mlx5_0","port":1},"lid":9,"portNum":17}
//	← {"id":4,"counters":{"SymbolErrorCounter":55,...}}
//	→ {"id":5,"op":"hello"}
//	← {"id":5,"hello":{"version":1,"helper":"nichealth-mad 0.2.0"}}
//
// Operations: hello, ports (the local CA ports libibumad sees, to match a
// sysfs port by its GUID), peer, peernode, nodeinfo (which node holds a
// LID now: {"node":{"nodeGuid":...,"nodeType":2,"numPorts":41}}),
// classportinfo, portcounters and portcountersext. A failure is {"id":N,"error":{"kind":K,"msg":M}} with K
// one of timeout, no-port, open, mad, request. A line that is not a
// request is answered with kind request and id 0. EOF on stdin ends the
// program with status 0. Anything libibmad prints goes to stderr.
//
// By hand, on a host with an InfiniBand port:
//
//	echo '{"id":1,"op":"ports","timeoutMs":1000}' | nichealth-mad
//
// and in the simulated fabric of ibsim (ibsim-utils):
//
//	echo '{"id":1,"op":"peer","timeoutMs":1000,"local":{"ca":"ibsim0","port":1}}' |
//	  SIM_HOST=Hca1 LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so nichealth-mad
package main
