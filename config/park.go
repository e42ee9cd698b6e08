package config

import "time"

// DefaultParkReprobe is how often a parked file is read again. Ten
// minutes: a restricted function's counters stay restricted until an
// operator changes the function's configuration, and each read of them
// makes mlx5 log an ACCESS_REG error, so six log lines an hour per file is
// the budget, while a fixed driver or firmware is still noticed within
// minutes.
const DefaultParkReprobe = 10 * time.Minute

// parkFrom reads parkReprobeInterval.
func parkFrom(c *Config, f *File, bad badFunc) error {
	c.ParkReprobe = f.ParkReprobeInterval.or(DefaultParkReprobe)
	if c.ParkReprobe < 10*time.Millisecond || c.ParkReprobe > 24*time.Hour {
		return bad("parkReprobeInterval", "%v is outside 10ms..24h", c.ParkReprobe)
	}
	return nil
}
