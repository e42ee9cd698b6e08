package module

import (
	"encoding/binary"
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
// warning, low warning) with conv. A block of all zeros or all ones is a
// module without thresholds, and limits whose alarms do not enclose their
// warnings are not trusted either: judging against them would raise
// conditions on a module's bad EEPROM.
func limits(b []byte, conv func([]byte) float64) *Limits {
	if len(b) < 8 {
		return nil
	}
	allZero, allOnes := true, true
	for _, c := range b[:8] {
		allZero = allZero && c == 0
		allOnes = allOnes && c == 0xff
	}
	if allZero || allOnes {
		return nil
	}
	l := Limits{HighAlarm: conv(b[0:2]), LowAlarm: conv(b[2:4]), HighWarning: conv(b[4:6]), LowWarning: conv(b[6:8])}
	if !(l.LowAlarm <= l.LowWarning && l.LowWarning < l.HighWarning && l.HighWarning <= l.HighAlarm) {
		return nil
	}
	return &l
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

// decodeSFF8636 follows SFF-8636 rev 2.11: lower page Tables 6-5 to 6-10,
// upper page 00h Table 6-14, page 03h Table 6-28.
func decodeSFF8636(m Memory, mod *Module) {
	lo := m.Lower
	mod.Flat = lo[2]&0x04 != 0
	if up := m.upper(0); up != nil {
		mod.Vendor = text(up[148-128 : 164-128])
		mod.PartNumber = text(up[168-128 : 184-128])
		mod.Revision = text(up[184-128 : 186-128])
		mod.Serial = text(up[196-128 : 212-128])
		mod.DateCode = text(up[212-128 : 220-128])
	} else {
		mod.Missing = append(mod.Missing, "upper page 00h (vendor, part and serial number)")
	}
	// Byte 2 bit 0 (Data_Not_Ready): the monitors are not valid yet.
	if lo[2]&0x01 != 0 {
		mod.Missing = append(mod.Missing, "monitors (the module says its data is not ready)")
		return
	}
	mod.TemperatureC = ptr(tempC(lo[22:24]))
	mod.VoltageV = ptr(volts(lo[26:28]))
	mod.Flags.Temperature = flag4(lo[6] >> 4)
	mod.Flags.Voltage = flag4(lo[7] >> 4)
	// Page 00h byte 220 bit 2: transmitter power measured at all.
	txPower := true
	if up := m.upper(0); up != nil {
		txPower = up[220-128]&0x04 != 0
	}
	for i := range 4 {
		l := Lane{Lane: i + 1}
		l.RxPowerM = ptr(powerMW(lo[34+2*i : 36+2*i]))
		l.TxBiasMA = ptr(biasMA(lo[42+2*i:44+2*i], 1))
		if txPower {
			l.TxPowerM = ptr(powerMW(lo[50+2*i : 52+2*i]))
		}
		bit := byte(1) << i
		l.RxLOS = lo[3]&bit != 0
		l.TxLOS = lo[3]&(bit<<4) != 0
		l.TxFault = lo[4]&bit != 0
		l.RxLOL = lo[5]&bit != 0
		l.TxLOL = lo[5]&(bit<<4) != 0
		// Bytes 9-14: two lanes a byte, the lower lane in the high nibble.
		nib := func(base int) byte {
			v := lo[base+i/2]
			if i%2 == 0 {
				return v >> 4
			}
			return v & 0x0f
		}
		l.RxPowerFlags = flag4(nib(9))
		l.TxBiasFlags = flag4(nib(11))
		l.TxPowerFlags = flag4(nib(13))
		l.Disabled = lo[86]&bit != 0
		mod.Lanes = append(mod.Lanes, l)
	}
	if mod.Flat {
		return
	}
	p3 := m.upper(3)
	if p3 == nil {
		mod.Missing = append(mod.Missing, "page 03h (the module's thresholds)")
		return
	}
	bias := func(b []byte) float64 { return biasMA(b, 1) }
	mod.Thresholds = Thresholds{
		TemperatureC: limits(p3[0:8], tempC),
		VoltageV:     limits(p3[16:24], volts),
		RxPowerMW:    limits(p3[48:56], powerMW),
		TxBiasMA:     limits(p3[56:64], bias),
		TxPowerMW:    limits(p3[64:72], powerMW),
	}
	if !txPower {
		mod.Thresholds.TxPowerMW = nil
	}
}

// cmisStates names CMIS Table 8-7's module states.
var cmisStates = map[byte]string{1: "ModuleLowPwr", 2: "ModulePwrUp", 3: "ModuleReady", 4: "ModulePwrDn", 5: "ModuleFault"}

// decodeCMIS follows OIF-CMIS 5.x: lower memory Tables 8-5 to 8-10, page
// 00h Tables 8-28 and 8-36, page 01h Table 8-53, page 02h Tables 8-64 and
// 8-65, page 10h Table 8-83, page 11h Tables 8-93 to 8-99.
func decodeCMIS(m Memory, mod *Module) {
	lo := m.Lower
	mod.Flat = lo[2]&0x80 != 0
	if s, ok := cmisStates[(lo[3]>>1)&0x07]; ok {
		mod.State = s
	}
	up0 := m.upper(0)
	if up0 != nil {
		mod.Vendor = text(up0[129-128 : 145-128])
		mod.PartNumber = text(up0[148-128 : 164-128])
		mod.Revision = text(up0[164-128 : 166-128])
		mod.Serial = text(up0[166-128 : 182-128])
		mod.DateCode = text(up0[182-128 : 190-128])
	} else {
		mod.Missing = append(mod.Missing, "upper page 00h (vendor, part and serial number)")
	}
	// Byte 9: bit 0 temperature high alarm, 1 low alarm, 2 high warning, 3
	// low warning; bits 4-7 the same for the supply voltage.
	cmisFlags := func(n byte) LevelFlag {
		return LevelFlag{HighAlarm: n&1 != 0, LowAlarm: n&2 != 0, HighWarning: n&4 != 0, LowWarning: n&8 != 0}
	}
	mod.Flags.Temperature = cmisFlags(lo[9] & 0x0f)
	mod.Flags.Voltage = cmisFlags(lo[9] >> 4)
	p1 := m.upper(1)
	// Page 01h bytes 159-160 advertise the monitors; a flat module has no
	// page 01h, and its temperature and voltage bytes are then taken as
	// they read (zero on passive copper).
	tempOK, vccOK, biasOK, txOK, rxOK, mult := true, true, true, true, true, 1.0
	if p1 != nil {
		tempOK = p1[159-128]&0x01 != 0
		vccOK = p1[159-128]&0x02 != 0
		biasOK = p1[160-128]&0x01 != 0
		txOK = p1[160-128]&0x02 != 0
		rxOK = p1[160-128]&0x04 != 0
		switch (p1[160-128] >> 3) & 0x03 {
		case 1:
			mult = 2
		case 2:
			mult = 4
		}
	}
	if tempOK {
		mod.TemperatureC = ptr(tempC(lo[14:16]))
	}
	if vccOK {
		mod.VoltageV = ptr(volts(lo[16:18]))
	}
	if mod.Flat {
		return
	}
	if p1 == nil {
		mod.Missing = append(mod.Missing, "page 01h (which monitors the module has)")
	}
	if p2 := m.upper(2); p2 != nil {
		bias := func(b []byte) float64 { return biasMA(b, mult) }
		mod.Thresholds = Thresholds{
			TemperatureC: limits(p2[0:8], tempC),
			VoltageV:     limits(p2[8:16], volts),
			TxPowerMW:    limits(p2[48:56], powerMW),
			TxBiasMA:     limits(p2[56:64], bias),
			RxPowerMW:    limits(p2[64:72], powerMW),
		}
		if !tempOK {
			mod.Thresholds.TemperatureC = nil
		}
		if !vccOK {
			mod.Thresholds.VoltageV = nil
		}
		if !biasOK {
			mod.Thresholds.TxBiasMA = nil
		}
		if !txOK {
			mod.Thresholds.TxPowerMW = nil
		}
		if !rxOK {
			mod.Thresholds.RxPowerMW = nil
		}
	} else {
		mod.Missing = append(mod.Missing, "page 02h (the module's thresholds)")
	}
	p11 := m.upper(0x11)
	if p11 == nil {
		mod.Missing = append(mod.Missing, "page 11h (lane monitors and flags)")
		return
	}
	var unsupported, disabled byte
	if up0 != nil {
		unsupported = up0[210-128]
	}
	if p10 := m.upper(0x10); p10 != nil {
		disabled = p10[130-128]
	}
	at := func(byteNo int) byte { return p11[byteNo-128] }
	for i := range 8 {
		bit := byte(1) << i
		l := Lane{Lane: i + 1, Unsupported: unsupported&bit != 0, Disabled: disabled&bit != 0}
		// Bytes 128-131: host lane 1 in the low nibble of 128, lane 2 in
		// its high nibble; 1h is DPDeactivated (Table 8-94).
		l.Deactivated = (at(128+i/2)>>(4*(i%2)))&0x0f == 1
		if txOK {
			l.TxPowerM = ptr(powerMW(p11[154-128+2*i : 156-128+2*i]))
		}
		if biasOK {
			l.TxBiasMA = ptr(biasMA(p11[170-128+2*i:172-128+2*i], mult))
		}
		if rxOK {
			l.RxPowerM = ptr(powerMW(p11[186-128+2*i : 188-128+2*i]))
		}
		l.TxFault = at(135)&bit != 0
		l.TxLOS = at(136)&bit != 0
		l.TxLOL = at(137)&bit != 0
		l.TxPowerFlags = LevelFlag{HighAlarm: at(139)&bit != 0, LowAlarm: at(140)&bit != 0, HighWarning: at(141)&bit != 0, LowWarning: at(142)&bit != 0}
		l.TxBiasFlags = LevelFlag{HighAlarm: at(143)&bit != 0, LowAlarm: at(144)&bit != 0, HighWarning: at(145)&bit != 0, LowWarning: at(146)&bit != 0}
		l.RxLOS = at(147)&bit != 0
		l.RxLOL = at(148)&bit != 0
		l.RxPowerFlags = LevelFlag{HighAlarm: at(149)&bit != 0, LowAlarm: at(150)&bit != 0, HighWarning: at(151)&bit != 0, LowWarning: at(152)&bit != 0}
		mod.Lanes = append(mod.Lanes, l)
	}
}

// decodeSFF8472 identifies an SFP module (SFF-8472 rev 12.4 Table 4-1,
// address 0x50 bytes 20-91); its diagnostics at 0xA2 are not read.
func decodeSFF8472(m Memory, mod *Module) {
	lo := m.Lower
	mod.Vendor = text(lo[20:36])
	mod.PartNumber = text(lo[40:56])
	mod.Revision = text(lo[56:60])
	mod.Serial = text(lo[68:84])
	mod.DateCode = text(lo[84:92])
	mod.Missing = append(mod.Missing, "diagnostics (SFP modules are identified only)")
}
