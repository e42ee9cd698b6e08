package event

import "github.com/nichealth/nichealthd/topology"

// The daemon's own checks, which disable alone when their code panics
// (check-failed): their events carry the degradation checks' names, so the
// boundary names them apart (a bug in the AER reader must not stop the
// counters; a bug in the PCI inventory must not stop the state checks
// its events are named after).
const (
	PCIeAERCheck      = "PCIeAERCheck"
	LinkSanityCheck   = "LinkSanityCheck"
	NICInventoryCheck = "NICInventoryCheck"
	// KernelLogCheck is the kernel-log check's, a check of its own in
	// --checks and on the wire.
	KernelLogCheck = "NICKernelLogCheck"
	// TransceiverCheck judges the RoCE ports' transceivers against their
	// own thresholds; FirmwareHealthCheck the NIC functions' devlink
	// health reporters and firmware activation (DESIGN.md section 7).
	// Checks of their own in --checks and on the wire.
	TransceiverCheck    = "NICTransceiverCheck"
	FirmwareHealthCheck = "NICFirmwareHealthCheck"
)

// StateCheckFor names the state check that speaks for a port of a link
// layer (NVSentinel's naming: InfiniBandStateCheck, EthernetStateCheck).
func StateCheckFor(linkLayer string) string {
	if linkLayer == topology.LinkLayerEthernet {
		return EthernetStateCheck
	}
	return InfiniBandStateCheck
}

// DegradationCheckFor names the counter check that speaks for a port of a
// link layer. Fatal counter breaches stay under it rather than the state
// check (DESIGN.md difference 2): a consumer keying conditions by check
// name would otherwise let the port's healthy state event clear a latched
// counter breach.
func DegradationCheckFor(linkLayer string) string {
	if linkLayer == topology.LinkLayerEthernet {
		return EthernetDegradationCheck
	}
	return InfiniBandDegradationCheck
}

// Check names of the rules' conditions: the seeds' analyzer rule names
// (state 6.2, 6.3; counter 1.4 and 3.1), which NVSentinel operators already
// know (DESIGN.md difference 15).
const (
	FlapCheck        = "RepeatedNICLinkFlap"
	DropCheck        = "NICPortDrop"
	DegradationCheck = "RepeatedNICDegradation"
)
