package config

import (
	"math"
	"time"
)

// RoCEFile is the [roce] table: the RoCE congestion and loss classes
// (DESIGN.md section 16) judged from mlx5's hw_counters and driver
// statistics on every monitored RoCE port.
type RoCEFile struct {
	Enabled            *bool    `toml:"enabled"`
	Window             Duration `toml:"window"`
	CongestedPerSecond *float64 `toml:"congestedPerSecond"`
	LossyPerSecond     *float64 `toml:"lossyPerSecond"`
	RxStarvedPerSecond *float64 `toml:"rxStarvedPerSecond"`
	PauseStormEvents   *float64 `toml:"pauseStormEvents"`
	PauseStormPercent  *float64 `toml:"pauseStormPercent"`
}

// RoCEConfig is [roce] with defaults applied.
type RoCEConfig struct {
	Enabled bool
	// Window is how long every signal of a port is held before its
	// classes are judged; a class clears after a full window below half
	// of its threshold.
	Window time.Duration
	// CongestedPerSecond: ECN-marked RoCE packets and CNPs (sent and
	// handled) per second for roce-congested; LossyPerSecond: sequence
	// errors and retransmission triggers per second for roce-lossy;
	// RxStarvedPerSecond: out_of_buffer drops per second for
	// roce-rx-starved.
	CongestedPerSecond float64
	LossyPerSecond     float64
	RxStarvedPerSecond float64
	// PauseStormEvents: pause storm events (warning and error) in one
	// window above which the port is in a storm; PauseStormPercent: the
	// share of the window one priority was paused by its peer above which
	// the pause is a storm too.
	PauseStormEvents  float64
	PauseStormPercent float64
}

// The [roce] defaults and why:
//   - window 1m: the counter table's congestion window (port_xmit_wait):
//     long enough that one incast burst or one link retrain does not
//     classify a port, short enough that a broken PFC setting shows within
//     a minute of the job that exposes it.
//   - congestedPerSecond 1000: a busy 400 GbE port carries tens of millions
//     of packets a second; a thousand marks and CNPs a second is DCQCN
//     steadily reacting (information only, never an unhealthy event).
//   - lossyPerSecond 10: a lossless fabric loses about nothing; a link
//     flap or a reroute costs a handful of retransmissions. Six hundred a
//     minute, sustained, is a priority that is not lossless.
//   - rxStarvedPerSecond 10: out_of_buffer counts packets dropped because
//     no receive WQE was posted; a healthy application never lets the
//     receive queue run dry for long, so ten drops a second for a minute is
//     a host that does not keep up.
//   - pauseStormEvents 0: mlx5 counts a storm event only after it has sent
//     pauses for longer than its device stall timeout (the stall prevention
//     threshold); a single one is a receiver that stopped draining.
//   - pauseStormPercent 50: a priority paused by its peer for half of a
//     minute has lost half of the port's bandwidth on that priority to
//     flow control; PFC that works pauses for microseconds at a time.
const (
	DefaultRoCEWindow             = time.Minute
	DefaultRoCECongestedPerSecond = 1000
	DefaultRoCELossyPerSecond     = 10
	DefaultRoCERxStarvedPerSecond = 10
	DefaultRoCEPauseStormEvents   = 0
	DefaultRoCEPauseStormPercent  = 50
)

// roceFrom reads [roce].
func roceFrom(c *Config, f *File, bad badFunc) error {
	v := f.RoCE
	c.RoCE = RoCEConfig{Enabled: boolOr(v.Enabled, true), Window: DefaultRoCEWindow,
		CongestedPerSecond: DefaultRoCECongestedPerSecond, LossyPerSecond: DefaultRoCELossyPerSecond,
		RxStarvedPerSecond: DefaultRoCERxStarvedPerSecond, PauseStormEvents: DefaultRoCEPauseStormEvents,
		PauseStormPercent: DefaultRoCEPauseStormPercent}
	setDur(&c.RoCE.Window, v.Window)
	if w := c.RoCE.Window; w < time.Second || w > time.Hour {
		return bad("roce.window", "%v must be 1s..1h (the window every RoCE signal of a port is judged over)", w)
	}
	for _, r := range []struct {
		key  string
		src  *float64
		dst  *float64
		max  float64
		unit string
	}{
		{"roce.congestedPerSecond", v.CongestedPerSecond, &c.RoCE.CongestedPerSecond, 1e12, "ECN-marked packets and CNPs per second"},
		{"roce.lossyPerSecond", v.LossyPerSecond, &c.RoCE.LossyPerSecond, 1e12, "sequence errors and retransmissions per second"},
		{"roce.rxStarvedPerSecond", v.RxStarvedPerSecond, &c.RoCE.RxStarvedPerSecond, 1e12, "out_of_buffer drops per second"},
		{"roce.pauseStormEvents", v.PauseStormEvents, &c.RoCE.PauseStormEvents, 1e9, "pause storm events per window; 0 raises on the first"},
		{"roce.pauseStormPercent", v.PauseStormPercent, &c.RoCE.PauseStormPercent, 100, "percent of the window one priority was paused"},
	} {
		if r.src != nil {
			*r.dst = *r.src
		}
		if x := *r.dst; math.IsNaN(x) || x < 0 || x > r.max {
			return bad(r.key, "%v must be 0..%g (%s)", x, r.max, r.unit)
		}
	}
	if c.RoCE.PauseStormPercent == 0 {
		return bad("roce.pauseStormPercent", "0 would call every pause a storm: must be above 0 (percent of the window one priority was paused), at most 100")
	}
	return nil
}
