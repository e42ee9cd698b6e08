package module

import (
	"fmt"
	"math"
)

// Quantity is a monitored quantity with thresholds.
type Quantity string

const (
	Temperature Quantity = "temperature"
	Voltage     Quantity = "voltage"
	TxBias      Quantity = "txBias"
	TxPower     Quantity = "txPower"
	RxPower     Quantity = "rxPower"
)

// Label is the quantity's name in a sentence.
func (q Quantity) Label() string {
	switch q {
	case Temperature:
		return "temperature"
	case Voltage:
		return "supply voltage"
	case TxBias:
		return "Tx laser bias"
	case TxPower:
		return "Tx power"
	case RxPower:
		return "Rx power"
	}
	return string(q)
}

// Format shows a value of the quantity in its operator unit: °C, V, mA,
// and dBm for optical power (mW internally).
func (q Quantity) Format(v float64) string {
	switch q {
	case Temperature:
		return fmt.Sprintf("%.1f °C", v)
	case Voltage:
		return fmt.Sprintf("%.3f V", v)
	case TxBias:
		return fmt.Sprintf("%.2f mA", v)
	case TxPower, RxPower:
		d := DBm(v)
		if math.IsInf(d, -1) {
			return "no light (0 mW)"
		}
		return fmt.Sprintf("%.2f dBm", d)
	}
	return fmt.Sprintf("%g", v)
}

// Level is how far past its limits a reading is.
type Level int

const (
	Warning Level = 1
	Alarm   Level = 2
)

func (l Level) String() string {
	if l == Alarm {
		return "alarm"
	}
	return "warning"
}

// Excursion is a reading past one of the module's own thresholds.
type Excursion struct {
	Quantity  Quantity `json:"quantity"`
	Lane      int      `json:"lane,omitempty"` // 0: the module itself
	Level     Level    `json:"level"`
	High      bool     `json:"high"`
	Value     float64  `json:"value"`
	Threshold float64  `json:"threshold"`
}

// String is the operator's sentence: "lane 2 Rx power -12.10 dBm below the
// module's low alarm threshold -11.40 dBm".
func (e Excursion) String() string {
	where := ""
	if e.Lane > 0 {
		where = fmt.Sprintf("lane %d ", e.Lane)
	}
	side, dir := "low", "below"
	if e.High {
		side, dir = "high", "above"
	}
	return fmt.Sprintf("%s%s %s %s the module's %s %s threshold %s", where, e.Quantity.Label(),
		e.Quantity.Format(e.Value), dir, side, e.Level, e.Quantity.Format(e.Threshold))
}

// NoLightMW is -30 dBm: a lane at or below it receives (or sends) nothing.
const NoLightMW = 0.001

// Excursions lists every reading of m past the module's own thresholds,
// the worse level only per reading (an alarm, not also its warning).
// inUse says whether a lane carries traffic; the low side of a lane that
// does not (a disabled or unsupported lane, a lane of a port that is not
// up) is not judged: an unused lane sends and receives nothing, and
// nothing is what a low threshold alarms on. nil inUse means every lane
// the module itself does not call unused.
//
// "Past" is strict: a high flag is set when the value exceeds the
// threshold and a low flag when it is below it (SFF-8472 Table 9-12,
// SFF-8636 and CMIS word it the same way), so a reading equal to a
// threshold is not past it, as the module's own flags say.
func Excursions(m Module, inUse func(Lane) bool) []Excursion {
	var out []Excursion
	judge := func(q Quantity, lane int, v *float64, lim *Limits, lowSide bool) {
		if v == nil || lim == nil || math.IsNaN(*v) {
			return
		}
		e := Excursion{Quantity: q, Lane: lane, Value: *v}
		switch {
		case *v > lim.HighAlarm:
			e.Level, e.High, e.Threshold = Alarm, true, lim.HighAlarm
		case *v > lim.HighWarning:
			e.Level, e.High, e.Threshold = Warning, true, lim.HighWarning
		case lowSide && *v < lim.LowAlarm:
			e.Level, e.Threshold = Alarm, lim.LowAlarm
		case lowSide && *v < lim.LowWarning:
			e.Level, e.Threshold = Warning, lim.LowWarning
		default:
			return
		}
		out = append(out, e)
	}
	judge(Temperature, 0, m.TemperatureC, m.Thresholds.TemperatureC, true)
	judge(Voltage, 0, m.VoltageV, m.Thresholds.VoltageV, true)
	for _, l := range m.Lanes {
		used := !l.Unused()
		if inUse != nil {
			used = used && inUse(l)
		}
		judge(TxBias, l.Lane, l.TxBiasMA, m.Thresholds.TxBiasMA, used)
		judge(TxPower, l.Lane, l.TxPowerM, m.Thresholds.TxPowerMW, used)
		judge(RxPower, l.Lane, l.RxPowerM, m.Thresholds.RxPowerMW, used)
	}
	return out
}
