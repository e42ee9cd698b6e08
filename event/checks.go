package event

import "github.com/nichealth/nichealthd/topology"

// The daemon's own checks, which disable alone when their code panics
// (check-failed): their events carry the degradation or state checks'
// names, so the boundary names them apart (a bug in the AER reader must not stop the
// counters; a bug in the PCI inventory must not stop the state checks
// its events are named after).
const (
	PCIeAERCheck      = "PCIeAERCheck"
	LinkSanityCheck   = "LinkSanityCheck"
	NICInventoryCheck = "NICInventoryCheck"
	// KernelLogCheck is the kernel-log check's, a check of its own in
	// --checks and on the wire.
	KernelLogCheck = "NICKernelLogCheck"
	// FarEndCheck is the far end's (DESIGN.md section 13, the classic
	// health check's "Remote errors check"): what the switch port at the
	// other end of each InfiniBand cable counts, a check of its own in
	// --checks and on the wire, so its conditions never mix with the
	// port's own counters.
	FarEndCheck = "InfiniBandFarEndCheck"
	// TransceiverCheck judges the RoCE ports' transceivers against their
	// own thresholds; FirmwareHealthCheck the NIC functions' devlink
	// health reporters and firmware activation (DESIGN.md section 7).
	// Checks of their own in --checks and on the wire.
	TransceiverCheck    = "NICTransceiverCheck"
	FirmwareHealthCheck = "NICFirmwareHealthCheck"
	// RoCECheck is the RoCE congestion and loss check's name in the panic
	// boundary (DESIGN.md section 16); its events are the Ethernet
	// degradation check's.
	RoCECheck = "RoCECongestionCheck"
	// CableVerdictCheck is the cable verdict's boundary (DESIGN.md section
	// 15): it raises no condition of its own, and a bug in it disables it
	// alone.
	CableVerdictCheck = "NICCableVerdict"
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
// link layer: the name of its non-fatal counter events (and of the
// monitoring conditions beside them), and the name the panic boundary
// gives the counter check.
func DegradationCheckFor(linkLayer string) string {
	if linkLayer == topology.LinkLayerEthernet {
		return EthernetDegradationCheck
	}
	return InfiniBandDegradationCheck
}

// CounterCheckFor names the check a counter breach of a port of a link
// layer is reported under (seed counter 11.1, DESIGN.md difference 2):
// a fatal breach under the state check, so every fatal signal of a NIC
// type is one node condition (quarantine rules written for
// InfiniBandStateCheck catch a latched link_downed), a non-fatal one under
// the degradation check. A state event never clears a counter breach: every
// clear carries its condition's error code (difference 13).
func CounterCheckFor(linkLayer string, fatal bool) string {
	if fatal {
		return StateCheckFor(linkLayer)
	}
	return DegradationCheckFor(linkLayer)
}

// FormerCounterCheck reports the state check a fatal counter breach raised
// under check belongs to now, when check is the degradation check builds
// before seed 11.1's naming raised it under ("", false otherwise).
func FormerCounterCheck(check string) (string, bool) {
	switch check {
	case InfiniBandDegradationCheck:
		return InfiniBandStateCheck, true
	case EthernetDegradationCheck:
		return EthernetStateCheck, true
	}
	return "", false
}

// Check names of the rules' conditions: the seeds' analyzer rule names
// (state 6.2, 6.3; counter 1.4 and 3.1), which NVSentinel operators already
// know (DESIGN.md difference 15).
const (
	FlapCheck        = "RepeatedNICLinkFlap"
	DropCheck        = "NICPortDrop"
	DegradationCheck = "RepeatedNICDegradation"
)

// FoldedBaselineName is the counter name of the condition key of a port's
// folded counter baselines (one healthy event per port and check at a
// reboot): a key of their own, never the port's, which under the state
// check is the link state's condition.
const FoldedBaselineName = "counters-baseline"
