package module

import (
	"encoding/binary"
	"math"
)

// SFF-8472 A0h byte 92 (Diagnostic Monitoring Type, Table 8-5).
const (
	sfpDDM         = 0x40 // bit 6: digital diagnostics implemented (at A2h)
	sfpInternalCal = 0x20 // bit 5: readings are in their units as read
	sfpExternalCal = 0x10 // bit 4: readings are A/D counts; A2h 56-91 convert
)

// decodeSFF8472 follows SFF-8472 rev 12.4: identity at A0h (Table 4-1,
// bytes 20-91), diagnostics at A2h (Table 9-1: thresholds 0-39,
// calibration constants 56-91, readings 96-105, status 110, alarm and
// warning flags 112-113 and 116-117). An SFP has one lane.
func decodeSFF8472(m Memory, mod *Module) {
	lo := m.Lower
	mod.Vendor = text(lo[20:36])
	mod.PartNumber = text(lo[40:56])
	mod.Revision = text(lo[56:60])
	mod.Serial = text(lo[68:84])
	mod.DateCode = text(lo[84:92])
	// Byte 8 bits 2-3: SFP+ passive or active cable technology (a DAC);
	// byte 2 21h (SFF-8024 Table 4-3): a copper pigtail, a DAC's plug.
	switch {
	case lo[8]&0x04 != 0 || (lo[2] == 0x21 && lo[8]&0x08 == 0):
		mod.Media = "copper"
	case lo[8]&0x08 != 0:
		mod.Media = "active-copper"
	default:
		mod.Media = "optical"
	}
	diag := lo[92]
	if diag&sfpDDM == 0 {
		// No diagnostics (every passive DAC, many active cables): nothing
		// at A2h is a reading, and it is not read.
		return
	}
	a2 := m.a2()
	if a2 == nil {
		mod.Missing = append(mod.Missing, "address A2h (the module's diagnostics and thresholds)")
		return
	}
	if diag&(sfpInternalCal|sfpExternalCal) == 0 {
		mod.Missing = append(mod.Missing, "diagnostics (A0h byte 92 says neither internal nor external calibration)")
		return
	}
	cal := sfpCalibration{}
	if diag&sfpExternalCal != 0 && diag&sfpInternalCal == 0 {
		cal = externalCalibration(a2)
	}
	// Byte 110 bit 0 (Data_Ready_Bar): the readings are not valid yet.
	if a2[110]&0x01 != 0 {
		mod.Missing = append(mod.Missing, "monitors (the module says its data is not ready)")
		return
	}
	temp := func(b []byte) float64 { return cal.temp(b) }
	vcc := func(b []byte) float64 { return cal.linear(b, cal.vSlope, cal.vOffset, 1e-4) }
	bias := func(b []byte) float64 { return cal.linear(b, cal.biasSlope, cal.biasOffset, 0.002) }
	tx := func(b []byte) float64 { return cal.linear(b, cal.txSlope, cal.txOffset, 1e-4) }
	rx := func(b []byte) float64 { return cal.rx(b) }
	mod.TemperatureC = ptr(temp(a2[96:98]))
	mod.VoltageV = ptr(vcc(a2[98:100]))
	l := Lane{Lane: 1, TxBiasMA: ptr(bias(a2[100:102])), TxPowerM: ptr(tx(a2[102:104])), RxPowerM: ptr(rx(a2[104:106]))}
	// Byte 110: bit 7 TX_DISABLE pin state, bit 6 soft TX disable, bit 2
	// TX_FAULT state, bit 1 RX_LOS state (live, not latched).
	l.Disabled = a2[110]&0xc0 != 0
	l.TxFault = a2[110]&0x04 != 0
	l.RxLOS = a2[110]&0x02 != 0
	// Bytes 112-113 alarms, 116-117 warnings: bit 7/6 temperature high/low,
	// 5/4 Vcc, 3/2 Tx bias, 1/0 Tx power; byte 113 (117) bit 7/6 Rx power.
	lvl := func(hi, lo byte) LevelFlag {
		return LevelFlag{HighAlarm: a2[112]&hi != 0, LowAlarm: a2[112]&lo != 0, HighWarning: a2[116]&hi != 0, LowWarning: a2[116]&lo != 0}
	}
	mod.Flags.Temperature = lvl(0x80, 0x40)
	mod.Flags.Voltage = lvl(0x20, 0x10)
	l.TxBiasFlags = lvl(0x08, 0x04)
	l.TxPowerFlags = lvl(0x02, 0x01)
	l.RxPowerFlags = LevelFlag{HighAlarm: a2[113]&0x80 != 0, LowAlarm: a2[113]&0x40 != 0, HighWarning: a2[117]&0x80 != 0, LowWarning: a2[117]&0x40 != 0}
	mod.Lanes = []Lane{l}
	// Thresholds are stored as the readings are: an externally calibrated
	// module's are A/D counts converted with the same constants.
	mod.Thresholds = Thresholds{
		TemperatureC: mod.limitsOf(Temperature, a2[0:8], temp),
		VoltageV:     mod.limitsOf(Voltage, a2[8:16], vcc),
		TxBiasMA:     mod.limitsOf(TxBias, a2[16:24], bias),
		TxPowerMW:    mod.limitsOf(TxPower, a2[24:32], tx),
		RxPowerMW:    mod.limitsOf(RxPower, a2[32:40], rx),
	}
}

// sfpCalibration holds SFF-8472's external calibration constants (A2h
// bytes 56-91, section 9.3); the zero value is internal calibration.
type sfpCalibration struct {
	external                               bool
	rxPoly                                 [5]float64 // Rx_PWR(0) to Rx_PWR(4)
	biasSlope, txSlope, tSlope, vSlope     float64
	biasOffset, txOffset, tOffset, vOffset float64
}

func externalCalibration(a2 []byte) sfpCalibration {
	c := sfpCalibration{external: true}
	// Bytes 56-75: Rx_PWR(4) down to Rx_PWR(0), IEEE 754 single precision.
	for i := range 5 {
		c.rxPoly[4-i] = float64(math.Float32frombits(binary.BigEndian.Uint32(a2[56+4*i:])))
	}
	// Slopes are unsigned fixed point with 8 fraction bits; offsets are
	// signed, in the unit of the reading's least significant bit.
	slope := func(at int) float64 { return float64(binary.BigEndian.Uint16(a2[at:])) / 256 }
	offset := func(at int) float64 { return float64(int16(binary.BigEndian.Uint16(a2[at:]))) }
	c.biasSlope, c.biasOffset = slope(76), offset(78)
	c.txSlope, c.txOffset = slope(80), offset(82)
	c.tSlope, c.tOffset = slope(84), offset(86)
	c.vSlope, c.vOffset = slope(88), offset(90)
	return c
}

// linear converts an unsigned reading to its unit (lsb units a count):
// as read when internally calibrated, slope × count + offset otherwise.
func (c sfpCalibration) linear(b []byte, slope, offset, lsb float64) float64 {
	v := float64(binary.BigEndian.Uint16(b))
	if c.external {
		v = slope*v + offset
	}
	return v * lsb
}

// temp: the temperature count is signed (1/256 °C).
func (c sfpCalibration) temp(b []byte) float64 {
	v := float64(int16(binary.BigEndian.Uint16(b)))
	if c.external {
		v = c.tSlope*v + c.tOffset
	}
	return v / 256
}

// rx: externally calibrated received power is the fourth-order polynomial
// of the count, in 0.1 µW; a result below zero is no light.
func (c sfpCalibration) rx(b []byte) float64 {
	v := float64(binary.BigEndian.Uint16(b))
	if c.external {
		p := 0.0
		for i := 4; i >= 0; i-- {
			p = p*v + c.rxPoly[i]
		}
		v = p
	}
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return v * 1e-4
}
