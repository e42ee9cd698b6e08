package module

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Module is what a module's memory says, decoded. Readings and thresholds
// that the module does not implement, or whose page was not read, are nil.
type Module struct {
	Spec       Spec   `json:"-"`
	SpecName   string `json:"spec"`
	Identifier byte   `json:"identifier"`
	Type       string `json:"type"`
	Vendor     string `json:"vendor,omitempty"`
	PartNumber string `json:"partNumber,omitempty"`
	Revision   string `json:"revision,omitempty"`
	Serial     string `json:"serial,omitempty"`
	DateCode   string `json:"dateCode,omitempty"`
	// State is the CMIS module state (ModuleReady, ModuleFault, ...);
	// empty for SFF-8636.
	State string `json:"state,omitempty"`
	// Flat is a module without pages (passive copper, most DACs): no
	// thresholds, often no monitors.
	Flat bool `json:"flat,omitempty"`

	TemperatureC *float64 `json:"temperatureC,omitempty"`
	VoltageV     *float64 `json:"voltageV,omitempty"`
	Lanes        []Lane   `json:"lanes,omitempty"`

	// Thresholds are the module's own, from its factory-set page (SFF-8636
	// page 03h, CMIS page 02h).
	Thresholds Thresholds `json:"thresholds"`
	// Flags are the module-level latched flags (clear on read: what
	// happened since the previous read of the flag bytes).
	Flags LevelFlags `json:"flags"`

	// Media says what the module carries signals over, from its own bytes
	// (SFF-8636 byte 147's transmitter technology, CMIS byte 85's media
	// type, SFF-8472 byte 8's cable technology): "optical", "copper"
	// (passive: no laser, no receiver, nothing to monitor per lane),
	// "active-copper" or "" when the module does not say.
	Media string `json:"media,omitempty"`
	// Implausible names each block of thresholds the module holds that
	// was not trusted (out of order, or outside what the quantity can
	// physically be), with the values: that quantity is then not judged.
	Implausible []string `json:"implausible,omitempty"`

	// Missing names what could not be decoded and why (a page not read).
	Missing []string `json:"missing,omitempty"`
}

// Lane is one media lane's monitors and latched flags.
type Lane struct {
	Lane     int      `json:"lane"` // 1-based
	TxBiasMA *float64 `json:"txBiasMA,omitempty"`
	TxPowerM *float64 `json:"txPowerMW,omitempty"`
	RxPowerM *float64 `json:"rxPowerMW,omitempty"`
	// Disabled: the host turned the lane's transmitter off (SFF-8636 byte
	// 86, CMIS page 10h byte 130); Unsupported: CMIS page 00h byte 210 says
	// the module has no such media lane.
	Disabled    bool `json:"disabled,omitempty"`
	Unsupported bool `json:"unsupported,omitempty"`
	// Deactivated: CMIS page 11h says host lane <Lane>'s data path is
	// DPDeactivated, which the module reports for unused lanes.
	Deactivated bool `json:"deactivated,omitempty"`
	// Latched flags.
	RxLOS   bool `json:"rxLOS,omitempty"`
	TxLOS   bool `json:"txLOS,omitempty"`
	RxLOL   bool `json:"rxLOL,omitempty"`
	TxLOL   bool `json:"txLOL,omitempty"`
	TxFault bool `json:"txFault,omitempty"`
	// Latched threshold flags per quantity.
	TxBiasFlags  LevelFlag `json:"txBiasFlags,omitzero"`
	TxPowerFlags LevelFlag `json:"txPowerFlags,omitzero"`
	RxPowerFlags LevelFlag `json:"rxPowerFlags,omitzero"`
}

// Unused reports whether the module itself says the lane carries nothing:
// its transmitter is disabled, the module has no such media lane, or its
// data path is deactivated and it is dark both ways (at or below -30 dBm
// sent and received; a deactivated host lane can still map to a lit media
// lane of a narrower application, which stays judged).
func (l Lane) Unused() bool {
	dark := func(v *float64) bool { return v == nil || *v <= NoLightMW }
	return l.Disabled || l.Unsupported || (l.Deactivated && dark(l.TxPowerM) && dark(l.RxPowerM))
}

// LevelFlag is the four latched threshold flags of one quantity.
type LevelFlag struct {
	HighAlarm   bool `json:"highAlarm,omitempty"`
	LowAlarm    bool `json:"lowAlarm,omitempty"`
	HighWarning bool `json:"highWarning,omitempty"`
	LowWarning  bool `json:"lowWarning,omitempty"`
}

// LevelFlags are the module-level latched threshold flags.
type LevelFlags struct {
	Temperature LevelFlag `json:"temperature,omitzero"`
	Voltage     LevelFlag `json:"voltage,omitzero"`
}

// Limits is one quantity's four thresholds, in the quantity's unit.
type Limits struct {
	HighAlarm   float64 `json:"highAlarm"`
	LowAlarm    float64 `json:"lowAlarm"`
	HighWarning float64 `json:"highWarning"`
	LowWarning  float64 `json:"lowWarning"`
}

// Thresholds are the module's own limits; nil where the module has none.
type Thresholds struct {
	TemperatureC *Limits `json:"temperatureC,omitempty"`
	VoltageV     *Limits `json:"voltageV,omitempty"`
	TxBiasMA     *Limits `json:"txBiasMA,omitempty"`
	TxPowerMW    *Limits `json:"txPowerMW,omitempty"`
	RxPowerMW    *Limits `json:"rxPowerMW,omitempty"`
}

// DBm converts milliwatts to dBm; zero and below (no light at all) is
// -Inf, which callers show as "no light".
func DBm(mW float64) float64 {
	if mW <= 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(mW)
}

// Units of the raw registers, common to SFF-8636 and CMIS.
func tempC(b []byte) float64 { return float64(int16(binary.BigEndian.Uint16(b))) / 256 }
func volts(b []byte) float64 { return float64(binary.BigEndian.Uint16(b)) / 10000 } // 100 µV
func powerMW(b []byte) float64 {
	return float64(binary.BigEndian.Uint16(b)) / 10000 // 0.1 µW
}
func biasMA(b []byte, mult float64) float64 {
	return float64(binary.BigEndian.Uint16(b)) * 0.002 * mult // 2 µA
}

func ptr(v float64) *float64 { return &v }

// text decodes a space-padded ASCII field; other bytes become '?' so the
// value is always printable UTF-8.
func text(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c == 0:
			// NUL padding as some vendors write it.
			sb.WriteByte(' ')
		case c >= 0x20 && c <= 0x7e:
			sb.WriteByte(c)
		default:
			sb.WriteByte('?')
		}
	}
	return strings.TrimSpace(sb.String())
}

// limits decodes four consecutive thresholds (high alarm, low alarm, high
// warning, low warning) of quantity q with conv. A block of all zeros or
// all ones is a module without thresholds (nil, no complaint). Limits
// whose alarms do not enclose their warnings, or that lie outside what
// the quantity can physically be (plausible.go), are not trusted either:
// judging against them would raise conditions on a module's bad EEPROM.
// Those come back nil with the reason, which Decode lists in Implausible.
func limits(q Quantity, b []byte, conv func([]byte) float64) (*Limits, string) {
	if len(b) < 8 {
		return nil, ""
	}
	allZero, allOnes := true, true
	for _, c := range b[:8] {
		allZero = allZero && c == 0
		allOnes = allOnes && c == 0xff
	}
	if allZero || allOnes {
		return nil, ""
	}
	l := Limits{HighAlarm: conv(b[0:2]), LowAlarm: conv(b[2:4]), HighWarning: conv(b[4:6]), LowWarning: conv(b[6:8])}
	return checkLimits(q, l)
}

// checkLimits is limits' judgement of decoded thresholds.
func checkLimits(q Quantity, l Limits) (*Limits, string) {
	if !(l.LowAlarm <= l.LowWarning && l.LowWarning < l.HighWarning && l.HighWarning <= l.HighAlarm) {
		return nil, fmt.Sprintf("%s thresholds out of order (low alarm %s, low warning %s, high warning %s, high alarm %s)",
			q.Label(), q.Format(l.LowAlarm), q.Format(l.LowWarning), q.Format(l.HighWarning), q.Format(l.HighAlarm))
	}
	if why := implausible(q, l); why != "" {
		return nil, why
	}
	return &l, ""
}

// flag4 decodes a nibble of four threshold flags in SFF-8636's order
// (bit 3 high alarm, 2 low alarm, 1 high warning, 0 low warning).
func flag4(n byte) LevelFlag {
	return LevelFlag{HighAlarm: n&8 != 0, LowAlarm: n&4 != 0, HighWarning: n&2 != 0, LowWarning: n&1 != 0}
}

// Decode decodes what Memory holds. It never fails: what cannot be decoded
// is nil and named in Missing.
func Decode(m Memory) Module {
	if len(m.Lower) != PageSize {
		return Module{SpecName: SpecUnknown.String(), Type: "unknown", Missing: []string{"lower page"}}
	}
	id := m.Lower[0]
	mod := Module{Spec: SpecOf(id), Identifier: id, Type: IdentifierName(id)}
	mod.SpecName = mod.Spec.String()
	switch mod.Spec {
	case SpecSFF8636:
		decodeSFF8636(m, &mod)
	case SpecCMIS:
		decodeCMIS(m, &mod)
	case SpecSFF8472:
		decodeSFF8472(m, &mod)
	default:
		mod.Missing = append(mod.Missing, "memory map of "+IdentifierName(id)+" (neither SFF-8636 nor CMIS)")
	}
	return mod
}

// limitsOf decodes one quantity's thresholds into mod, noting the block
// it did not trust.
func (mod *Module) limitsOf(q Quantity, b []byte, conv func([]byte) float64) *Limits {
	l, why := limits(q, b, conv)
	if why != "" {
		mod.Implausible = append(mod.Implausible, why)
	}
	return l
}
