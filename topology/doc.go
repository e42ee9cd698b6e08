// Package topology answers "what RDMA hardware is on this host": it walks
// class/infiniband in sysfs and describes each device (PCI address, card,
// NUMA node, PF or VF, netdevs, ports). It reads; it never judges health.
// Sub-packages derive GPU↔NIC relations and roles, parse sysfs values, and
// simulate a host for tests.
package topology
