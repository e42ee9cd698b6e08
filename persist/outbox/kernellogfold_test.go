package outbox

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// Kernel-log conditions are one per pattern and function: two patterns on
// the same port, or two node-level ones, never fold into each other, while
// a condition's raise and clear (and its count updates) share a key, so the
// outbox keeps the newest word on each.
func TestKernelLog_FoldKeyIsPatternAndFunction(t *testing.T) {
	ev := func(kind event.Kind, pattern, pci string, ports ...event.PortRef) uint64 {
		s := event.Spec{Kind: kind, CheckName: "NICKernelLogCheck", IsHealthy: kind == event.KindKernelLogCleared, ErrorCode: []string{pattern},
			Ports: ports, Metadata: map[string]string{"pattern": pattern}}
		if pci != "" {
			s.Metadata["pci"] = pci
		}
		if len(ports) == 0 {
			s.Entities = []event.Entity{{Type: event.EntityKernelLog, Value: pattern}}
		}
		e := event.New(s, event.Stamp{})
		return FoldKey(&e)
	}
	port := event.PortRef{Device: "mlx5_0", Port: 1}
	raise := ev(event.KindKernelLog, "cmd_exec_timeout", "0000:19:00.0", port)
	if raise != ev(event.KindKernelLogCleared, "cmd_exec_timeout", "0000:19:00.0", port) {
		t.Error("a condition's raise and clear fold apart")
	}
	if raise == ev(event.KindKernelLog, "tx_timeout", "0000:19:00.0", port) {
		t.Error("two patterns on one port share a fold key")
	}
	if ev(event.KindKernelLog, "napi_soft_lockup", "") == ev(event.KindKernelLog, "fw_unrecoverable_error", "") {
		t.Error("two node-level patterns share a fold key")
	}
}
