// Package roles decides what each NIC is for — Compute, Storage or
// Management — from the default route, NUMA locality, the GPU↔NIC matrix
// and the link layer, in the order of seed section 4.2.2. Management NICs
// are never monitored; Compute and Storage NICs are compared only with
// their own kind (seed 4.3).
package roles
