package runner

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
)

// benchSnapshot measures building the published verdict from a warmed
// monitor: what a poll that changed something costs on top of the cycle.
func benchSnapshot(b *testing.B, shape string) {
	m, _ := perfMonitor(b, shape, false)
	perfWarm(m, time.Unix(1_700_000_000, 0), 3)
	model := health.NewModel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = health.Build(health.Node{}, m.PortInfos(), model.Conditions())
	}
}

func BenchmarkSnapshot_dgxH100(b *testing.B) { benchSnapshot(b, "dgx-h100") }
func BenchmarkSnapshot_xxl(b *testing.B)     { benchSnapshot(b, "xxl") }
