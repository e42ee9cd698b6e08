// Package cable answers the operator's question about a degraded link,
// "what do I replace?", per InfiniBand and RoCE port (DESIGN.md section
// 15): from evidence the cycle already holds (our port's error counters,
// the switch port's PMA counters from the far end's reading, our module's
// per-lane diagnostics, the kernel's link-down reason) it says in which
// direction errors flow (to-host, from-host, both) and which part to
// suspect (our transceiver, the peer's, the cable, our port), with the
// evidence. It reads nothing itself and changes no severity: the verdict
// is added to the events the checks raise and shown in every view. It
// also measures each link-down episode against the RDMA transport's retry
// budget.
package cable
