package farend

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

func xmitWait(n uint64) func(*wire.PortCounters) {
	return func(c *wire.PortCounters) { c.PortXmitWait = n }
}

// The xmit-wait note's lost bandwidth on the far end (DESIGN.md section
// 13, difference 14): ticks/s × 8 bytes per tick × 8 bits against the
// port's 400 Gb/s, judged against the seed's 10% over a minute of reads,
// as the local port_xmit_wait is. 562,500,000 ticks a second for a minute
// are 36 Gb/s, 9%: not raised; 687,500,000 a second are 44 Gb/s, 11%:
// raised, with the share it lost.
func TestDesign_13_FarEndCongestionIsLostBandwidth(t *testing.T) {
	h := newHarness(t, "[farEnd.counters]\nPortXmitWait = true\n")
	h.read(0, leaf1, xmitWait(0))
	if got := strings.Join(codes(h.read(time.Minute, leaf1, xmitWait(60*562_500_000))), " "); strings.Contains(got, "peer:port_xmit_wait") {
		t.Fatalf("9%% of the link lost raised: %s", got)
	}
	specs := h.read(time.Minute, leaf1, xmitWait(60*(562_500_000+687_500_000)))
	for _, s := range specs {
		if strings.Join(s.ErrorCode, ",") == "peer:port_xmit_wait" {
			if !strings.Contains(s.Message, "11.0%") {
				t.Errorf("message does not say 11.0%% lost: %s", s.Message)
			}
			return
		}
	}
	t.Fatalf("11%% of the link lost not raised: %v", codes(specs))
}
