package module

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
	// Byte 85 (Table 8-24): the module media type. Passive copper has no
	// laser and no receiver: no lane monitors whatever page 01h says, and
	// without page 01h (flat memory) no temperature or voltage monitor
	// either: its bytes 14-17 are not readings.
	switch lo[85] {
	case 0x01, 0x02:
		mod.Media = "optical"
	case 0x03:
		mod.Media = "copper"
		biasOK, txOK, rxOK = false, false, false
		if p1 == nil {
			tempOK, vccOK = false, false
		}
	case 0x04:
		mod.Media = "active-copper"
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
	if !(tempOK || vccOK || biasOK || txOK || rxOK) {
		return
	}
	if p2 := m.upper(2); p2 != nil {
		bias := func(b []byte) float64 { return biasMA(b, mult) }
		if tempOK {
			mod.Thresholds.TemperatureC = mod.limitsOf(Temperature, p2[0:8], tempC)
		}
		if vccOK {
			mod.Thresholds.VoltageV = mod.limitsOf(Voltage, p2[8:16], volts)
		}
		if txOK {
			mod.Thresholds.TxPowerMW = mod.limitsOf(TxPower, p2[48:56], powerMW)
		}
		if biasOK {
			mod.Thresholds.TxBiasMA = mod.limitsOf(TxBias, p2[56:64], bias)
		}
		if rxOK {
			mod.Thresholds.RxPowerMW = mod.limitsOf(RxPower, p2[64:72], powerMW)
		}
	} else {
		mod.Missing = append(mod.Missing, "page 02h (the module's thresholds)")
	}
	if !cmisLanePages(lo, p1) {
		return
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

// cmisLanePages says whether a paged CMIS module has anything on its lane
// pages (10h controls, 11h flags and monitors) to read: not passive copper
// (byte 85 = 03h), and, when page 01h was read, a lane monitor (byte 160
// bits 0-2) or a lane flag (bytes 157-158, Tx fault/LOS/LOL and Rx
// LOS/LOL) advertised.
func cmisLanePages(lo, p1 []byte) bool {
	if lo[85] == 0x03 {
		return false
	}
	if p1 == nil {
		return true
	}
	return p1[160-128]&0x07 != 0 || p1[157-128]&0x07 != 0 || p1[158-128]&0x06 != 0
}
