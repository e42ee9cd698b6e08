package cable

import (
	"fmt"
	"time"
)

// Transport is how RDMA reliable-connected queue pairs retry before they
// fail the job: the IBTA local ACK timeout exponent (4.096 µs × 2^Timeout
// per try) and the retry count (tries after the first).
type Transport struct {
	Timeout int // 0-31; 0 turns the timer off (IBTA: infinite)
	Retries int // 0-7
}

// NCCL's defaults (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT 7): what the
// jobs on a GPU node most likely run with.
const (
	DefaultTimeout = 20
	DefaultRetries = 7
)

// Budget is how long a link may stay down before the transport gives up:
// 4.096 µs × 2^Timeout per try, times Retries + 1 tries. 0 means no
// budget: with the timer off a queue pair waits for ever. The product is
// exact in nanoseconds (4096 ns × 2^31 × 8 fits an int64).
func (t Transport) Budget() time.Duration {
	if t.Timeout <= 0 || t.Timeout > 31 || t.Retries < 0 {
		return 0
	}
	return time.Duration(4096) << t.Timeout * time.Duration(t.Retries+1)
}

// Episode is one link-down episode of a port: how long it was down (as
// the state polls saw it: within one poll interval at either end) and
// the budget it is measured against.
type Episode struct {
	DownFor time.Duration
	Budget  time.Duration
}

// Within reports whether the transport retried through the episode: a
// job whose queue pairs used the link survived it.
func (e Episode) Within() bool { return e.Budget == 0 || e.DownFor <= e.Budget }

// Sentence is what the port's link-up event says: "down 1.2 s: within
// the 34 s RDMA retry budget" or "down 40.0 s: longer than the 34 s RDMA
// retry budget".
func (e Episode) Sentence() string {
	if e.Budget == 0 {
		return fmt.Sprintf("down %s: the RDMA transport's retry timer is off (transportTimeout 0), no retry budget applies", Seconds(e.DownFor))
	}
	side := "within"
	if !e.Within() {
		side = "longer than"
	}
	return fmt.Sprintf("down %s: %s the %s RDMA retry budget", Seconds(e.DownFor), side, Seconds(e.Budget))
}

// Seconds shows a duration as an operator reads it: "34 s", "1.2 s",
// "250.0 ms", "32.8 µs".
func Seconds(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 10:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.1f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.1f µs", s*1e6)
}
