package countertable

import (
	"fmt"
	"strings"

	"github.com/nichealth/nichealthd/observe"
)

// maxStatName is ETH_GSTRING_LEN less its NUL: the driver cannot have a
// longer name.
const maxStatName = 31

// IsEthtool reports whether the counter is a driver statistic
// (observe.EthtoolPrefix): "ethtool:rx_corrected_bits_phy" is the value
// `ethtool -S <netdev>` prints for that name, read on the port's own
// netdev. Such counters apply to Ethernet (RoCE) ports only; an
// InfiniBand port's IPoIB netdev has no PHY statistics.
func (d *Definition) IsEthtool() bool { return observe.CounterPath(d.Path).Ethtool() }

// EthtoolStat is the driver statistic's name ("" for a file counter).
func (d *Definition) EthtoolStat() string { return observe.CounterPath(d.Path).Stat() }

// PHY default thresholds. Why each is what it is:
//
//   - rx_corrected_bits_phy, ber 1e-5 over a minute, non-fatal: the bits
//     FEC corrected, as a share of the bits the line carried (port rate ×
//     elapsed time; FEC codes idles too, so the line rate, not the traffic,
//     is the denominator). The RS(544,514) FEC of 50G-per-lane PAM4 links
//     (200/400 GbE, HDR/NDR) keeps the post-FEC error rate below 1e-15 up to
//     a pre-FEC BER of about 2.4e-4 and then falls off the cliff (seed
//     2.3.1). Healthy links run at 1e-8 to 1e-6; 1e-5 is more than an order
//     of magnitude before the cliff: a link that has lost most of its
//     margin but still loses nothing — drain it at leisure, hence
//     non-fatal. One minute (4e6 corrected bits per second at 1e-5 on
//     400 Gb/s, so the count is never a handful) averages out the burst of
//     a touched cable yet reports a degrading link within a minute.
//   - rx_symbol_err_phy, velocity 120/hour, fatal: errors FEC could not
//     correct, so frames were lost on a fabric that assumes none are. A
//     healthy link sees about none (post-FEC BER < 1e-15 is about one an
//     hour at 400 Gb/s); the seed's bar for a link outside spec, 120 an
//     hour (seed 2.4.2, as symbol_error_fatal), means FEC's margin is gone
//     and RoCE transport retries are the next thing to run out. A single
//     one (a reseated cable) is not fatal.
//   - rx_pcs_symbol_err_phy, velocity 10/minute, non-fatal: symbol errors
//     the PCS saw that FEC did not correct (or FEC is off). Sustained,
//     traffic is being lost; a few at link training are normal.
//   - link_down_events_phy, delta 0, fatal: the PHY's count of link downs,
//     the 64-bit twin of link_downed (which stops at 255, see saturation.go).
//     Any increment is a link down, fatal for the same reason (seed 4.1.1).
const (
	DefaultBERThreshold = 1e-5
	// RSFECCorrectionLimit is the pre-FEC BER at which RS(544,514) stops
	// keeping the post-FEC rate below 1e-15: the cliff the BER threshold
	// keeps its margin from.
	RSFECCorrectionLimit = 2.4e-4
)

// TableDefaults is the daemon's default counter table: the seed's
// (Defaults) followed by the PHY rows, which the seed's table predates.
func TableDefaults() []Definition { return append(Defaults(), PHYDefaults()...) }

// PHYDefaults are the default rows for mlx5's PHY statistics on Ethernet
// (RoCE) ports.
func PHYDefaults() []Definition {
	return []Definition{
		{Name: "rx_corrected_bits_phy", Path: observe.EthtoolPrefix + "rx_corrected_bits_phy", Enabled: true,
			ThresholdType: TypeBER, Threshold: DefaultBERThreshold, VelocityUnit: UnitMinute,
			Description: "Pre-FEC bit error rate high - link losing FEC margin"},
		{Name: "rx_symbol_err_phy", Path: observe.EthtoolPrefix + "rx_symbol_err_phy", Enabled: true, IsFatal: true,
			ThresholdType: TypeVelocity, Threshold: 120, VelocityUnit: UnitHour,
			Description: "Post-FEC uncorrectable errors - FEC margin exhausted, frames lost"},
		{Name: "rx_pcs_symbol_err_phy", Path: observe.EthtoolPrefix + "rx_pcs_symbol_err_phy", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 10, VelocityUnit: UnitMinute,
			Description: "PCS symbol errors not corrected by FEC - traffic lost"},
		{Name: "link_down_events_phy", Path: observe.EthtoolPrefix + "link_down_events_phy", Enabled: true, IsFatal: true,
			ThresholdType: TypeDelta, Threshold: 0,
			Description: "PHY link down (64-bit) - QP disconnect"},
	}
}

// ethtoolStatProblem validates the name after "ethtool:".
func ethtoolStatProblem(stat string) string {
	switch {
	case stat == "":
		return "names no statistic; write ethtool:<name> as `ethtool -S <netdev>` prints it, e.g. ethtool:rx_corrected_bits_phy"
	case strings.Contains(stat, observe.InterfacePlaceholder):
		return "must not name an interface: an ethtool: counter is read on the port's own netdev, e.g. ethtool:rx_corrected_bits_phy"
	case len(stat) > maxStatName:
		return fmt.Sprintf("names a statistic longer than %d characters, which no driver can have", maxStatName)
	}
	for _, c := range stat {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "may name a statistic of letters, digits, '_', '-' and '.' only, e.g. ethtool:rx_corrected_bits_phy"
		}
	}
	return ""
}

// berProblem checks a ber threshold: a rate of bits, so at most 1.
func berProblem(d *Definition) string {
	if d.ThresholdType == TypeBER && d.Threshold > 1 {
		return fmt.Sprintf("%v is not a bit error rate; a ber threshold is between 0 and 1, e.g. 1e-5", d.Threshold)
	}
	return ""
}
