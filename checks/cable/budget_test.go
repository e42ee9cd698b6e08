package cable

import (
	"testing"
	"time"
)

// TestCable_15_RetryBudget: 4.096 µs × 2^timeout per try × (retries + 1);
// NCCL's defaults (20, 7) give 34.36 s.
func TestCable_15_RetryBudget(t *testing.T) {
	for _, c := range []struct {
		timeout, retries int
		want             time.Duration
	}{
		{20, 7, 34359738368 * time.Nanosecond}, // 34.36 s
		{14, 7, 536870912 * time.Nanosecond},   // 0.54 s
		{20, 0, 4294967296 * time.Nanosecond},  // one try
		{31, 7, 70368744177664 * time.Nanosecond},
		{1, 0, 8192 * time.Nanosecond},
		{0, 7, 0}, // timer off: no budget
	} {
		if got := (Transport{Timeout: c.timeout, Retries: c.retries}).Budget(); got != c.want {
			t.Errorf("timeout %d retries %d: %v, want %v", c.timeout, c.retries, got, c.want)
		}
	}
	if got := Seconds(Transport{Timeout: 20, Retries: 7}.Budget()); got != "34 s" {
		t.Errorf("NCCL defaults read %q, want 34 s", got)
	}
	if b := (Transport{Timeout: 20, Retries: 7}).Budget().Seconds(); b < 34.35 || b > 34.37 {
		t.Errorf("NCCL defaults %.3f s, want 34.36 s", b)
	}
}

// TestCable_15_EpisodeSentence: the link-up event says which side of the
// budget the episode fell on.
func TestCable_15_EpisodeSentence(t *testing.T) {
	b := Transport{Timeout: 20, Retries: 7}.Budget()
	for _, c := range []struct {
		down time.Duration
		want string
	}{
		{1200 * time.Millisecond, "down 1.2 s: within the 34 s RDMA retry budget"},
		{40 * time.Second, "down 40 s: longer than the 34 s RDMA retry budget"},
		{b, "down 34 s: within the 34 s RDMA retry budget"},
		{b + time.Millisecond, "down 34 s: longer than the 34 s RDMA retry budget"},
	} {
		if got := (Episode{DownFor: c.down, Budget: b}).Sentence(); got != c.want {
			t.Errorf("%v: %q, want %q", c.down, got, c.want)
		}
	}
	if got := (Episode{DownFor: time.Second}).Sentence(); got != "down 1.0 s: the RDMA transport's retry timer is off (transportTimeout 0), no retry budget applies" {
		t.Errorf("timer off: %q", got)
	}
}
