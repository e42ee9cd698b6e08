package outbox

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// Two PCIe AER events about the same ports (a NIC function and the
// switch port above it) are different conditions: neither folds the
// other. An event without those keys hashes as before.
func TestAER_FoldKeyKeepsPCIFunctionsApart(t *testing.T) {
	ev := func(pci, class string) *event.Event {
		e := event.New(event.Spec{Kind: event.KindPCIeAER, CheckName: event.InfiniBandDegradationCheck, IsFatal: true,
			Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, ErrorCode: []string{"PCIE_AER_FATAL"},
			Metadata: map[string]string{"pci": pci, "aer": class}}, event.Stamp{})
		return &e
	}
	a, b, c := FoldKey(ev("0000:3a:00.0", "fatal")), FoldKey(ev("0000:3b:00.0", "fatal")), FoldKey(ev("0000:3a:00.0", "nonfatal"))
	if a == b || a == c {
		t.Errorf("fold keys collide: %x %x %x", a, b, c)
	}
	plain := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, Device: "mlx5_0", Port: 1}, event.Stamp{})
	withEmpty := plain
	withEmpty.Metadata = map[string]string{"pci": ""}
	if FoldKey(&plain) != FoldKey(&withEmpty) {
		t.Error("an event without pci/aer metadata changed its fold key")
	}
}
