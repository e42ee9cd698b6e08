// Package roce is the RoCE congestion and loss check (DESIGN.md section
// 16, the RoCE counterpart of port_xmit_wait): it classifies every
// monitored RoCE port from the counters mlx5 keeps for a lossless fabric
// (the kernel's mlx5 counters documentation names them), held over one
// window per port with the counter table's window rule (counters.Hold):
//
//   - roce-congested: ECN marks and CNPs rising with no loss. DCQCN doing
//     its job; information only (/metrics, D-Bus, nichealthctl), never an
//     event or a condition.
//   - roce-lossy: sequence errors and retransmission triggers rising. A
//     lossless priority that is not lossless (PFC, ECN, trust mode or
//     buffer configuration on the path).
//   - roce-rx-starved: out_of_buffer rising. The host, not the network: the
//     application does not post receive WQEs fast enough.
//   - roce-pause-storm: the NIC's pause storm events, or one priority
//     paused for most of the window, with its priority and direction.
//
// The last three are non-fatal conditions of the port under
// EthernetDegradationCheck, error code the class; each raise says its
// evidence, reason and fix, and clears after a full window below half of
// its threshold. The pause time of every priority is also turned into the
// bandwidth it cost (Gb/s and percent of the port rate) as
// counters.LostBandwidth does for port_xmit_wait.
//
// The signals are read by the observer's counter plan (rows named
// "roce:<counter>", Ethernet ports only): hw_counters files and driver
// statistics through the one bounded reader, a missing one failing open
// and named once in the device's counter availability log. The classes
// judge with what remains.
package roce
