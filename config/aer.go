package config

import (
	"math"
	"time"
)

// AERFile is the [pcieAER] table: PCIe AER counters of each monitored NIC
// function and every bridge and switch port on its path to the root port.
type AERFile struct {
	Enabled              *bool    `toml:"enabled"`
	CorrectablePerMinute *float64 `toml:"correctablePerMinute"`
	Window               Duration `toml:"window"`
	NonFatalQuiet        Duration `toml:"nonFatalQuiet"`
}

// AERConfig is [pcieAER] with defaults applied.
type AERConfig struct {
	Enabled              bool
	CorrectablePerMinute float64
	Window               time.Duration
	NonFatalQuiet        time.Duration
}

// The [pcieAER] defaults and why:
//   - correctablePerMinute 10: the link layer replays a corrupted packet
//     and the kernel counts a correctable error; a healthy Gen4/Gen5 link
//     logs a handful a day (a retrain at boot, a hot-plug). Ten a minute
//     sustained for the whole window is a marginal link (a riser, a
//     connector, signal integrity) replaying constantly, which costs
//     bandwidth and precedes uncorrectable errors.
//   - window 10m: a burst of a few dozen (one retrain) stays under the
//     rate; a fixed link clears within the window.
//   - nonFatalQuiet 1h: an uncorrectable non-fatal error (completion
//     timeout, malformed TLP) lost a transaction the driver recovered; an
//     hour without another is when it counts as a one-off.
const (
	DefaultAERCorrectablePerMinute = 10
	DefaultAERWindow               = 10 * time.Minute
	DefaultAERNonFatalQuiet        = time.Hour
)

// aerFrom reads [pcieAER].
func aerFrom(c *Config, f *File, bad badFunc) error {
	a := f.PCIeAER
	c.PCIeAER = AERConfig{Enabled: boolOr(a.Enabled, true), CorrectablePerMinute: DefaultAERCorrectablePerMinute,
		Window: DefaultAERWindow, NonFatalQuiet: DefaultAERNonFatalQuiet}
	if a.CorrectablePerMinute != nil {
		c.PCIeAER.CorrectablePerMinute = *a.CorrectablePerMinute
	}
	setDur(&c.PCIeAER.Window, a.Window)
	setDur(&c.PCIeAER.NonFatalQuiet, a.NonFatalQuiet)
	if x := c.PCIeAER.CorrectablePerMinute; math.IsNaN(x) || x < 0 || x > 1e9 {
		return bad("pcieAER.correctablePerMinute", "%v must be 0..1e9 (correctable errors per minute over pcieAER.window; 0 turns the rate off)", x)
	}
	if w := c.PCIeAER.Window; w < time.Minute || w > 24*time.Hour {
		return bad("pcieAER.window", "%v must be 1m..24h", w)
	}
	if q := c.PCIeAER.NonFatalQuiet; q < time.Minute || q > 7*24*time.Hour {
		return bad("pcieAER.nonFatalQuiet", "%v must be 1m..168h", q)
	}
	return nil
}
