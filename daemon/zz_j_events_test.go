package daemon

import (
	"testing"
	"time"
)

func TestZZJEvents(t *testing.T) {
	m, _ := perfMonitor(t, "xxl", false)
	now := time.Unix(1_700_000_000, 0)
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		t0 := time.Now()
		specs, _ := m.Cycle(now)
		kinds := map[string]int{}
		for _, s := range specs {
			kinds[string(s.Kind)+"/"+s.CheckName]++
		}
		t.Logf("cycle %d: %v %d %v", i, time.Since(t0), len(specs), kinds)
	}
}
