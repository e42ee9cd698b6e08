package event

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// Seed link-state 11.1: a port's events name the check of its link layer,
// NVSentinel's InfiniBandStateCheck/EthernetStateCheck and
// InfiniBandDegradationCheck/EthernetDegradationCheck.
func TestLinkState_11_1_ChecksFollowTheLinkLayer(t *testing.T) {
	if StateCheckFor(topology.LinkLayerInfiniBand) != "InfiniBandStateCheck" || StateCheckFor(topology.LinkLayerEthernet) != "EthernetStateCheck" ||
		DegradationCheckFor(topology.LinkLayerInfiniBand) != "InfiniBandDegradationCheck" ||
		DegradationCheckFor(topology.LinkLayerEthernet) != "EthernetDegradationCheck" {
		t.Fatal("check names do not follow the link layer")
	}
}
