package module

import "fmt"

// What each quantity's thresholds can plausibly be. The registers hold
// more than physics allows (a signed 16-bit temperature reaches -128 °C);
// a module whose EEPROM says its high temperature alarm is -100 °C is
// wrong about itself, not on fire, and its thresholds are ignored rather
// than judged against (a healthy 45 °C module would otherwise be "past its
// alarm" and replaced). The bounds reject what would make a module in
// normal operation past its own threshold; on the other side (a low
// threshold at the register's minimum, a high one at its maximum) a
// threshold merely never fires, which vendors use to mean "none", and is
// left alone.
//
//   - Temperature: every SFF/CMIS temperature class (commercial 0-70 °C,
//     extended -5-85 °C, industrial -40-85 °C) operates at room
//     temperature, so a high threshold below +25 °C or a low one above it
//     would alarm on a module in its own operating range.
//   - Supply voltage: the modules are powered at 3.3 V ± 5 %; a low
//     threshold above 3.3 V or a high one below it alarms at nominal
//     supply.
//   - Tx bias: every laser needs well over 1 mA to emit (VCSELs lase from
//     about 1 mA, DFB/EML lasers run at tens of mA), so a high threshold
//     under 1 mA alarms on every lit lane.
//   - Tx and Rx optical power: no IEEE 802.3 optical PMD has its maximum
//     launch or receiver overload below -10 dBm (0.1 mW), so a high
//     threshold under it alarms on healthy light; none has a minimum above
//     +5 dBm (3.16 mW), so a low threshold over it alarms on any light.
type plausibleRange struct {
	lowMin, lowMax   float64 // the low alarm and warning
	highMin, highMax float64 // the high alarm and warning
}

var plausibleRanges = map[Quantity]plausibleRange{
	Temperature: {lowMin: -1e9, lowMax: 25, highMin: 25, highMax: 1e9},
	Voltage:     {lowMin: 0, lowMax: 3.3, highMin: 3.3, highMax: 1e9},
	TxBias:      {lowMin: 0, lowMax: 1e9, highMin: 1, highMax: 1e9},
	TxPower:     {lowMin: 0, lowMax: 3.16, highMin: 0.1, highMax: 1e9},
	RxPower:     {lowMin: 0, lowMax: 3.16, highMin: 0.1, highMax: 1e9},
}

// implausible says why limits l of quantity q cannot be what the module
// means, or "" when they can.
func implausible(q Quantity, l Limits) string {
	r, ok := plausibleRanges[q]
	if !ok {
		return ""
	}
	for _, t := range []struct {
		name     string
		v        float64
		min, max float64
	}{
		{"high alarm", l.HighAlarm, r.highMin, r.highMax},
		{"high warning", l.HighWarning, r.highMin, r.highMax},
		{"low warning", l.LowWarning, r.lowMin, r.lowMax},
		{"low alarm", l.LowAlarm, r.lowMin, r.lowMax},
	} {
		if t.v < t.min || t.v > t.max {
			return fmt.Sprintf("%s %s %s is not physically plausible (%s)", q.Label(), t.name, q.Format(t.v), rangeText(q, t.min, t.max))
		}
	}
	return ""
}

func rangeText(q Quantity, min, max float64) string {
	if max >= 1e9 {
		return "at least " + q.Format(min)
	}
	return "at most " + q.Format(max)
}
