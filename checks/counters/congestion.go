package counters

// DefaultXmitWaitBytesPerTick is what one port_xmit_wait tick stands for on
// Quantum-class hardware: the counter increments every 8 bytes per port
// regardless of width (PortSamplesControl tick == 7, lost bytes = ticks ×
// (tick+1)). Switch-IB-class parts count 32 bytes per lane instead; set
// xmitWaitBytesPerTick to 32 × lanes there.
const DefaultXmitWaitBytesPerTick = 8

// LostBandwidth turns a port_xmit_wait rate into the bandwidth the port
// could not send: ticks/s × bytes per tick × 8 bits, in Gb/s, and that as a
// percentage of the port's rate. percent is 0 when the port rate is
// unknown (portGbps <= 0).
func LostBandwidth(ticksPerSec, bytesPerTick, portGbps float64) (gbps, percent float64) {
	if ticksPerSec <= 0 || bytesPerTick <= 0 {
		return 0, 0
	}
	gbps = ticksPerSec * bytesPerTick * 8 / 1e9
	if portGbps > 0 {
		percent = gbps / portGbps * 100
	}
	return gbps, percent
}

// isXmitWait reports whether a definition reads port_xmit_wait, whose rate
// is congestion rather than errors.
func isXmitWait(d *Definition) bool { return fileName(d.Path) == "port_xmit_wait" }
