// Package gpumeta provides the GPU↔NIC relation matrix that role
// classification (seed section 4.2) reads: which GPUs exist, on which NUMA
// node, and how far each NIC is from each GPU in the PCIe tree. The matrix
// comes from NVSentinel's gpu_metadata.json or is derived from sysfs alone,
// so a plain bare-metal node needs no collector (DESIGN.md difference 7).
package gpumeta
