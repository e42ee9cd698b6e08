// Package topology answers "what RDMA hardware is on this host": it walks
// class/infiniband in sysfs and describes each device (PCI address, card,
// NUMA node, PF or VF, netdevs, ports). It reads; it never judges health.
// Sub-packages derive GPU↔NIC relations and roles, parse sysfs values, and
// simulate a host for tests. What lies beyond the host's own ports (the
// switch port at the other end of a cable, the fabric's switch ports a
// host is assigned) is read by MAD in the mad room, not here.
package topology
