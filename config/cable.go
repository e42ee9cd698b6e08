package config

// CableFile is the [cable] table: the RDMA transport's retry budget that
// each link-down episode is measured against (DESIGN.md section 15).
type CableFile struct {
	TransportTimeout *int `toml:"transportTimeout"`
	TransportRetries *int `toml:"transportRetries"`
}

// CableConfig is [cable] with defaults applied.
type CableConfig struct {
	// TransportTimeout is the IBTA local ACK timeout exponent the jobs'
	// queue pairs use (4.096 µs × 2^timeout per try; 0 turns the timer
	// off) and TransportRetries their retry count.
	TransportTimeout int
	TransportRetries int
}

// The [cable] defaults are NCCL's (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT
// 7): on a GPU node the jobs that a link-down episode can fail are NCCL's,
// and 20/7 gives the 34 s budget operators quote.
const (
	DefaultTransportTimeout = 20
	DefaultTransportRetries = 7
)

// cableFrom reads [cable]: the ranges are the wire's (a 5-bit timeout
// exponent, a 3-bit retry count), so a value outside cannot be what a
// queue pair uses.
func cableFrom(c *Config, f *File, bad badFunc) error {
	c.Cable = CableConfig{TransportTimeout: DefaultTransportTimeout, TransportRetries: DefaultTransportRetries}
	if p := f.Cable.TransportTimeout; p != nil {
		if *p < 0 || *p > 31 {
			return bad("cable.transportTimeout", "%d must be 0..31: the IBTA local ACK timeout exponent (4.096 µs × 2^timeout per try; NCCL_IB_TIMEOUT, default 20; 0 turns the timer off)", *p)
		}
		c.Cable.TransportTimeout = *p
	}
	if p := f.Cable.TransportRetries; p != nil {
		if *p < 0 || *p > 7 {
			return bad("cable.transportRetries", "%d must be 0..7: the RDMA retry count is a 3-bit field (NCCL_IB_RETRY_CNT, default 7)", *p)
		}
		c.Cable.TransportRetries = *p
	}
	return nil
}
