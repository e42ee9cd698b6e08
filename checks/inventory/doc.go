// Package inventory judges the PCI inventory (topology/inventory): a NIC
// function that is on the bus but has no usable RDMA device (unbound,
// bound to another driver, no infiniband/), a compute or storage NIC that
// was there last boot and is gone from the bus now, firmware or model
// drift between the cards of one role group, and fewer active compute
// ports than the node should have. Those are the failures that leave no
// class/infiniband entry at all, so that nothing else sees them.
//
// It keeps two memories. Memory is boot-scoped like every check's (its
// section of the state file): what it raised, so every raise has its
// clear. Expected outlives reboots (a file of its own beside the state
// file, which the daemon writes through persist): which functions were
// compute and storage NICs, by PCI address, serial number and node GUID,
// so that a card missing after a reboot is not taken for a node that
// never had it.
package inventory
