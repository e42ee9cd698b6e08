package module

// SFF-8636 byte 147 (upper page 00h), bits 7-4: transmitter technology
// (Table 6-19). 0h-9h are lasers and LEDs; Ah and Bh are passive copper
// (unequalized, equalized); Ch-Fh copper with active equalizers or
// limiting amplifiers: no transmitter, no optical receiver.
const (
	sffTechCopperPassiveUnequalized = 0xa
	sffTechCopperPassiveEqualized   = 0xb
)

// decodeSFF8636 follows SFF-8636 rev 2.11: lower page Tables 6-5 to 6-10,
// upper page 00h Tables 6-14, 6-19 and 6-24, page 03h Table 6-28.
func decodeSFF8636(m Memory, mod *Module) {
	lo := m.Lower
	mod.Flat = lo[2]&0x04 != 0
	up := m.upper(0)
	// What the module monitors, by its own bytes. Optical modules monitor
	// temperature, supply voltage, Rx power and Tx bias (SFF-8636 makes
	// them mandatory, and modules older than byte 220's temperature and
	// voltage bits leave those bits clear); Tx power only when byte 220
	// bit 2 says so. Copper (byte 147 Ah-Fh) has no laser and no optical
	// receiver: no lane monitors whatever bytes 34-57 hold, and
	// temperature and voltage only when byte 220 bits 5 and 4 advertise
	// them (a passive DAC's bytes 22-23 are not a temperature).
	tempOK, vccOK, laneOK, txPower := true, true, true, true
	if up != nil {
		mod.Vendor = text(up[148-128 : 164-128])
		mod.PartNumber = text(up[168-128 : 184-128])
		mod.Revision = text(up[184-128 : 186-128])
		mod.Serial = text(up[196-128 : 212-128])
		mod.DateCode = text(up[212-128 : 220-128])
		diag := up[220-128]
		txPower = diag&0x04 != 0
		// Byte 130 21h (SFF-8024 Table 4-3: copper pigtail) is a DAC's
		// plug even where byte 147 says nothing of copper.
		switch tech := up[147-128] >> 4; {
		case tech == sffTechCopperPassiveUnequalized || tech == sffTechCopperPassiveEqualized || up[130-128] == 0x21:
			mod.Media = "copper"
		case tech > sffTechCopperPassiveEqualized:
			mod.Media = "active-copper"
		default:
			mod.Media = "optical"
		}
		if mod.Media != "optical" {
			tempOK, vccOK, laneOK, txPower = diag&0x20 != 0, diag&0x10 != 0, false, false
		}
	} else {
		mod.Missing = append(mod.Missing, "upper page 00h (vendor, part and serial number)")
	}
	// Byte 2 bit 0 (Data_Not_Ready): the monitors are not valid yet.
	if lo[2]&0x01 != 0 {
		mod.Missing = append(mod.Missing, "monitors (the module says its data is not ready)")
		return
	}
	if tempOK {
		mod.TemperatureC = ptr(tempC(lo[22:24]))
	}
	if vccOK {
		mod.VoltageV = ptr(volts(lo[26:28]))
	}
	mod.Flags.Temperature = flag4(lo[6] >> 4)
	mod.Flags.Voltage = flag4(lo[7] >> 4)
	for i := range 4 {
		l := Lane{Lane: i + 1}
		if laneOK {
			l.RxPowerM = ptr(powerMW(lo[34+2*i : 36+2*i]))
			l.TxBiasMA = ptr(biasMA(lo[42+2*i:44+2*i], 1))
		}
		if txPower {
			l.TxPowerM = ptr(powerMW(lo[50+2*i : 52+2*i]))
		}
		// Byte 3: Rx LOS of lanes 1-4 in bits 0-3, Tx LOS in bits 4-7;
		// byte 4 bits 0-3 Tx fault; byte 5 Rx LOL in bits 0-3, Tx LOL in
		// bits 4-7 (Table 6-5).
		bit := byte(1) << i
		if mod.Media == "copper" {
			// A passive cable has no receiver to lose a signal or a
			// lock, no transmitter to fail: whatever its flag bytes
			// hold, there is nothing they can be about.
			l.Disabled = lo[86]&bit != 0
			mod.Lanes = append(mod.Lanes, l)
			continue
		}
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
	if mod.Flat || !(tempOK || vccOK || laneOK) {
		return
	}
	p3 := m.upper(3)
	if p3 == nil {
		mod.Missing = append(mod.Missing, "page 03h (the module's thresholds)")
		return
	}
	bias := func(b []byte) float64 { return biasMA(b, 1) }
	if tempOK {
		mod.Thresholds.TemperatureC = mod.limitsOf(Temperature, p3[0:8], tempC)
	}
	if vccOK {
		mod.Thresholds.VoltageV = mod.limitsOf(Voltage, p3[16:24], volts)
	}
	if laneOK {
		mod.Thresholds.RxPowerMW = mod.limitsOf(RxPower, p3[48:56], powerMW)
		mod.Thresholds.TxBiasMA = mod.limitsOf(TxBias, p3[56:64], bias)
	}
	if txPower {
		mod.Thresholds.TxPowerMW = mod.limitsOf(TxPower, p3[64:72], powerMW)
	}
}
