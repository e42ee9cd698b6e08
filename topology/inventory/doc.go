// Package inventory lists the NVIDIA/Mellanox network functions on the
// PCI bus (vendor 0x15b3, network or InfiniBand class) whatever the RDMA
// stack made of them: bound or not, to which driver, with or without an
// infiniband/ and a net/ child. Discovery starts from class/infiniband and
// so never sees a card whose driver failed to probe or that was unbound;
// this scan starts from bus/pci/devices and does. It reads; it never
// judges (checks/inventory does).
package inventory
