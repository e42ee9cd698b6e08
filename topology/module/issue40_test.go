package module

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func put16(b []byte, at int, vs ...uint16) {
	for i, v := range vs {
		binary.BigEndian.PutUint16(b[at+2*i:], v)
	}
}

// Issue 40 row 5: a module whose page 03h says its high temperature alarm
// is -100 °C (ordered: -120 ≤ -110 < -105 ≤ -100) is healthy at 45 °C; its
// temperature thresholds are ignored with the reason, never judged.
func TestIssue40_Row5_ImplausibleThresholdsIgnored(t *testing.T) {
	v := sff8636Vector()
	v.Lower[22], v.Lower[23] = 45, 0
	copy(v.Upper[3], []byte{0x9c, 0, 0x88, 0, 0x97, 0, 0x92, 0}) // -100, -120, -105, -110 °C
	m := Decode(v)
	if m.Thresholds.TemperatureC != nil {
		t.Errorf("temperature thresholds %+v trusted", *m.Thresholds.TemperatureC)
	}
	if len(m.Implausible) != 1 || !strings.Contains(m.Implausible[0], "temperature high alarm -100.0 °C is not physically plausible") {
		t.Errorf("implausible %q", m.Implausible)
	}
	for _, e := range Excursions(m, nil) {
		if e.Quantity == Temperature {
			t.Errorf("judged against implausible thresholds: %v", e)
		}
	}
	if m.Thresholds.TxBiasMA == nil || m.Thresholds.RxPowerMW == nil {
		t.Error("the plausible quantities' thresholds were dropped with the implausible one")
	}
}

// The plausible ranges, each at its edge (the literals are the ranges'
// reasons in plausible.go: room temperature, 3.3 V nominal, 1 mA, -10 and
// +5 dBm); a threshold at the register's far end (a low temperature alarm
// of -128 °C: "none") never fires and is left alone.
func TestIssue40_Row5_PlausibleRanges(t *testing.T) {
	for _, tc := range []struct {
		q  Quantity
		l  Limits
		ok bool
	}{
		{Temperature, Limits{HighAlarm: 80, LowAlarm: -10, HighWarning: 70, LowWarning: 0}, true},
		{Temperature, Limits{HighAlarm: 30, LowAlarm: -10, HighWarning: 25, LowWarning: 0}, true},
		{Temperature, Limits{HighAlarm: 30, LowAlarm: -10, HighWarning: 24.9, LowWarning: 0}, false},
		{Temperature, Limits{HighAlarm: 127.99, LowAlarm: -128, HighWarning: 70, LowWarning: 0}, true},
		{Temperature, Limits{HighAlarm: 80, LowAlarm: -10, HighWarning: 70, LowWarning: 26}, false},
		{Voltage, Limits{HighAlarm: 3.63, LowAlarm: 2.97, HighWarning: 3.465, LowWarning: 3.135}, true},
		{Voltage, Limits{HighAlarm: 3.63, LowAlarm: 3.31, HighWarning: 3.465, LowWarning: 3.32}, false},
		{Voltage, Limits{HighAlarm: 3.63, LowAlarm: 2.97, HighWarning: 3.29, LowWarning: 3.135}, false},
		{Voltage, Limits{HighAlarm: 6.5535, LowAlarm: 0, HighWarning: 3.465, LowWarning: 3.135}, true},
		{TxBias, Limits{HighAlarm: 8.5, LowAlarm: 0, HighWarning: 8, LowWarning: 1}, true},
		{TxBias, Limits{HighAlarm: 0.99, LowAlarm: 0, HighWarning: 0.5, LowWarning: 0.1}, false},
		{RxPower, Limits{HighAlarm: 3.4673, LowAlarm: 0.0467, HighWarning: 1.7378, LowWarning: 0.0933}, true},
		{RxPower, Limits{HighAlarm: 0.09, LowAlarm: 0.001, HighWarning: 0.05, LowWarning: 0.002}, false},
		{TxPower, Limits{HighAlarm: 6, LowAlarm: 3.2, HighWarning: 5, LowWarning: 4}, false},
	} {
		got, why := checkLimits(tc.q, tc.l)
		if (got != nil) != tc.ok || (why == "") != tc.ok {
			t.Errorf("%s %+v: trusted %v (%q), want %v", tc.q, tc.l, got != nil, why, tc.ok)
		}
	}
}

// passiveDAC is a passive copper QSFP28 DAC as such cables are built: paged
// memory (byte 2 bit 2 clear) with a page 03h copied from an optic's, byte
// 147 = A0h (copper, unequalized), byte 220 = 0 (no monitoring), lane
// monitor bytes zero and bytes 22-23 = 01 80 (what a reader taking them as
// a temperature prints as 1.5 °C).
func passiveDAC() Memory {
	v := sff8636Vector()
	lo := make([]byte, PageSize)
	lo[0], lo[1] = 0x11, 0x07
	lo[22], lo[23] = 0x01, 0x80
	up0 := v.Upper[0]
	up0[147-128] = 0xa0
	up0[220-128] = 0
	return Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 3: v.Upper[3]}}
}

// Issue 40 row 9: copper and no-DOM modules decoded by their own bytes.
func TestIssue40_Row9_CopperByItsOwnBytes(t *testing.T) {
	m := Decode(passiveDAC())
	if m.Media != "copper" || m.TemperatureC != nil || m.VoltageV != nil {
		t.Errorf("passive DAC: media %q temperature %v voltage %v; want copper and no readings", m.Media, m.TemperatureC, m.VoltageV)
	}
	for _, l := range m.Lanes {
		if l.RxPowerM != nil || l.TxBiasMA != nil || l.TxPowerM != nil {
			t.Errorf("lane %d of a passive DAC has monitors %+v", l.Lane, l)
		}
	}
	if ex := Excursions(m, nil); len(ex) != 0 {
		t.Errorf("a passive DAC in an up port: %v", ex)
	}
	if p := NextPages(passiveDAC()); len(p) != 0 {
		t.Errorf("pages asked of a passive DAC: %x", p)
	}
	// The same DAC advertising temperature (byte 220 bit 5) shows it.
	d := passiveDAC()
	d.Upper[0][220-128] = 0x20
	if m := Decode(d); m.TemperatureC == nil || *m.TemperatureC != 1.5 || m.VoltageV != nil {
		t.Errorf("a copper module advertising its temperature: %v", m.TemperatureC)
	}
	// A DAC whose byte 147 says nothing of copper but whose connector
	// (byte 130) is a copper pigtail is copper all the same.
	pig := passiveDAC()
	pig.Upper[0][147-128], pig.Upper[0][130-128] = 0, 0x21
	if m := Decode(pig); m.Media != "copper" || len(Excursions(m, nil)) != 0 || len(NextPages(pig)) != 0 {
		t.Errorf("copper pigtail: media %q, excursions %v", m.Media, Excursions(m, nil))
	}
	// An optic with byte 220's temperature bit clear (as SFF-8636 modules
	// older than it are) still has its temperature.
	if m := Decode(sff8636Vector()); m.Media != "optical" || m.TemperatureC == nil || m.Lanes[0].RxPowerM == nil {
		t.Errorf("optic: %+v", m)
	}
	// CMIS: byte 85 = 03h passive copper, flat memory: no readings.
	lo := make([]byte, PageSize)
	lo[0], lo[2], lo[85] = 0x18, 0x80, 0x03
	lo[14], lo[15] = 0x01, 0x80
	cm := Decode(Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, PageSize)}})
	if cm.Media != "copper" || cm.TemperatureC != nil || len(cm.Lanes) != 0 {
		t.Errorf("CMIS passive copper: %+v", cm)
	}
	// CMIS paged passive copper asks for page 01h, then nothing past what
	// page 01h advertises: no lane pages.
	lo[2] = 0
	mem := Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, PageSize)}}
	if p := NextPages(mem); fmt.Sprint(p) != "[1]" {
		t.Errorf("paged CMIS copper first asks %x, want page 01h", p)
	}
	mem.Upper[1] = make([]byte, PageSize)
	if p := NextPages(mem); len(p) != 0 {
		t.Errorf("paged CMIS copper advertising nothing then asks %x", p)
	}
	// Lane monitors and flags advertised on a passive copper cable mean
	// nothing (no laser, no receiver): still no lane pages, no readings.
	mem.Upper[1][160-128], mem.Upper[1][158-128] = 0x07, 0x06
	if p := NextPages(mem); len(p) != 0 {
		t.Errorf("paged CMIS copper advertising lane monitors asks %x", p)
	}
}

// sfp28 is an SFP28 25G SR optic (SFF-8472 rev 12.4): A0h identity, A2h
// diagnostics. external picks external calibration (A0h byte 92 bit 4):
// then every reading and threshold is an A/D count converted with A2h
// bytes 56-91.
func sfp28(external bool) Memory {
	lo := make([]byte, PageSize)
	lo[0], lo[2] = 0x03, 0x07 // SFP, LC
	copy(lo[20:], "ACME SFP        ")
	copy(lo[40:], "SFP28-25G-SR    ")
	copy(lo[56:], "A0  ")
	copy(lo[68:], "SFP-SN-0001     ")
	copy(lo[84:], "250101  ")
	a2 := make([]byte, PageSize)
	if !external {
		lo[92] = 0x68                                 // DDM, internal calibration, average Rx power
		put16(a2, 0, 80<<8, 0xf600, 75<<8, 0xfb00)    // 80, -10, 75, -5 °C
		put16(a2, 8, 36300, 29700, 34650, 31350)      // V
		put16(a2, 16, 6000, 1000, 5500, 1500)         // 12, 2, 11, 3 mA
		put16(a2, 24, 15850, 1585, 12590, 1995)       // 1.585, 0.1585, 1.259, 0.1995 mW
		put16(a2, 32, 15849, 398, 12589, 501)         // +2, -14, +1, -13 dBm
		put16(a2, 96, 33<<8, 33000, 3000, 5000, 4000) // 33 °C, 3.3 V, 6 mA, 0.5 mW, 0.4 mW
		return Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, PageSize)}, A2: a2}
	}
	lo[92] = 0x58 // DDM, external calibration, average Rx power
	// Slopes 2.0 (0x0200) for temperature and Vcc, 2.5 (0x0280) for Tx
	// power, 1.5 (0x0180) for bias; temperature offset +1 °C (256/256),
	// the others 0; Rx power = 2 × count + 100 (Rx_PWR(1) = 2, Rx_PWR(0) =
	// 100). Each constant differs, so none can stand for another.
	binary.BigEndian.PutUint32(a2[68:], 0x40000000) // 2.0f
	binary.BigEndian.PutUint32(a2[72:], 0x42c80000) // 100.0f
	put16(a2, 76, 0x0180, 0, 0x0280, 0, 0x0200, 256, 0x0200, 0)
	put16(a2, 0, 0x2780, 0xfa80, 0x2500, 0xfd00)   // (2 × count + 256)/256: 80, -10, 75, -5 °C
	put16(a2, 8, 18150, 14850, 17325, 15675)       // × 2: 3.63, 2.97, 3.465, 3.135 V
	put16(a2, 16, 4000, 666, 3666, 1000)           // × 1.5 × 2 µA: 12, 1.998, 10.998, 3 mA
	put16(a2, 24, 6340, 634, 5036, 798)            // × 2.5 × 0.1 µW: 1.585, 0.1585, 1.259, 0.1995 mW
	put16(a2, 32, 7874, 149, 6245, 200)            // 2 × count + 100
	put16(a2, 96, 0x1000, 16500, 2000, 2000, 1950) // 33 °C, 3.3 V, 6 mA, 0.5 mW, 0.4 mW
	return Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, PageSize)}, A2: a2}
}

// Issue 40 row 9: SFP/SFP28 modules decoded (identity at A0h, diagnostics
// at A2h with internal or external calibration as byte 92 says) and judged
// like the others.
func TestIssue40_Row9_SFF8472Diagnostics(t *testing.T) {
	for _, external := range []bool{false, true} {
		t.Run(fmt.Sprintf("external=%v", external), func(t *testing.T) {
			m := Decode(sfp28(external))
			if m.Spec != SpecSFF8472 || m.Vendor != "ACME SFP" || m.Serial != "SFP-SN-0001" || m.PartNumber != "SFP28-25G-SR" || len(m.Missing) != 0 {
				t.Fatalf("identity %+v", m)
			}
			if !near(m.TemperatureC, 33) || !near(m.VoltageV, 3.3) || len(m.Lanes) != 1 {
				t.Fatalf("module readings %v °C %v V, %d lanes", *m.TemperatureC, *m.VoltageV, len(m.Lanes))
			}
			l := m.Lanes[0]
			if !near(l.TxBiasMA, 6) || !near(l.TxPowerM, 0.5) || !near(l.RxPowerM, 0.4) {
				t.Errorf("lane: bias %v mA, Tx %v mW, Rx %v mW; want 6, 0.5, 0.4", *l.TxBiasMA, *l.TxPowerM, *l.RxPowerM)
			}
			limitsNear(t, "temperature", m.Thresholds.TemperatureC, [4]float64{80, -10, 75, -5})
			limitsNear(t, "voltage", m.Thresholds.VoltageV, [4]float64{3.63, 2.97, 3.465, 3.135})
			if m.Thresholds.TxBiasMA == nil || m.Thresholds.RxPowerMW == nil {
				t.Fatalf("lane thresholds %+v", m.Thresholds)
			}
			limitsNear(t, "Tx power", m.Thresholds.TxPowerMW, [4]float64{1.585, 0.1585, 1.259, 0.1995})
			if ex := Excursions(m, nil); len(ex) != 0 {
				t.Errorf("healthy SFP28: %v", ex)
			}
		})
	}
	// Past its own threshold: judged like a QSFP's lane.
	v := sfp28(false)
	put16(v.A2, 104, 300) // Rx 0.03 mW = -15.2 dBm, under the -14 dBm alarm
	v.A2[110] = 0x02      // RX_LOS
	m := Decode(v)
	ex := Excursions(m, nil)
	if len(ex) != 1 || ex[0].Quantity != RxPower || ex[0].Level != Alarm || ex[0].Lane != 1 || !m.Lanes[0].RxLOS {
		t.Errorf("SFP28 lane past its Rx alarm: %v, %+v", ex, m.Lanes[0])
	}
	// A DAC (no DDM: byte 92 bit 6 clear) is not asked for A2h.
	dac := sfp28(false)
	dac.Lower[92], dac.Lower[8] = 0, 0x04
	if WantsA2(dac.Lower) || !WantsA2(sfp28(true).Lower) {
		t.Error("WantsA2 ignores byte 92 bit 6")
	}
	if m := Decode(dac); m.Media != "copper" || m.TemperatureC != nil || len(m.Lanes) != 0 {
		t.Errorf("SFP DAC: %+v", m)
	}
}

// hexLines writes b as hexdump -C lines starting at base, as sfputil does.
func hexLines(sb *strings.Builder, b []byte, base int) {
	for i := 0; i < len(b); i += 16 {
		fmt.Fprintf(sb, "        %08x ", base+i)
		for j := range 16 {
			fmt.Fprintf(sb, "%02x ", b[i+j])
			if j == 7 {
				sb.WriteString(" ")
			}
		}
		sb.WriteString("|................|\n")
	}
}

// Issue 40 row 9: hex dumps parsed by their section headers. sfputil's
// eeprom-hexdump prints A0h then A2h, each from offset 0: A2h is the
// diagnostics, not a second A0h. A section the reader does not recognise
// is an error, never a silent overwrite.
func TestIssue40_Row9_HexDumpSections(t *testing.T) {
	v := sfp28(false)
	var sb strings.Builder
	sb.WriteString("EEPROM hexdump for port Ethernet0\n        A0h dump\n")
	hexLines(&sb, v.Lower, 0)
	hexLines(&sb, v.Upper[0], 0x80)
	sb.WriteString("\n        A2h dump\n")
	hexLines(&sb, v.A2, 0)
	hexLines(&sb, make([]byte, PageSize), 0x80)
	mem, err := ParseDump([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if m := Decode(mem); m.Identifier != 0x03 || m.Vendor != "ACME SFP" || !near(m.TemperatureC, 33) {
		t.Errorf("sfputil hexdump decoded as %+v", m)
	}
	// The same without the A2h header: offsets 0x00-0xff come twice.
	bad := strings.Replace(sb.String(), "A2h dump", "Diagnostics", 1)
	if _, err := ParseDump([]byte(bad)); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("an unrecognised second section: %v, want an error saying an offset came twice", err)
	}
	// Two pages at 0x80 without a header between them.
	var two strings.Builder
	q := sff8636Vector()
	hexLines(&two, q.Lower, 0)
	hexLines(&two, q.Upper[0], 0x80)
	hexLines(&two, q.Upper[3], 0x80)
	if _, err := ParseDump([]byte(two.String())); err == nil {
		t.Error("page 03h silently read over page 00h")
	}
	// Banked CMIS: bank 1's page 11h never overwrites bank 0's.
	c := cmisVector()
	var cb strings.Builder
	hexLines(&cb, c.Lower, 0)
	for _, p := range []byte{0, 1, 2, 0x10, 0x11} {
		fmt.Fprintf(&cb, "Bank 0 Page %02xh\n", p)
		hexLines(&cb, c.Upper[p], 0x80)
	}
	cb.WriteString("Bank 1 Page 11h\n")
	hexLines(&cb, make([]byte, PageSize), 0x80)
	cm, err := ParseDump([]byte(cb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := Decode(cm); !near(got.Lanes[0].TxBiasMA, 100) {
		t.Errorf("bank 1 read over bank 0: lane 1 bias %v", got.Lanes[0].TxBiasMA)
	}
	// An identifier no memory map has: refused, not decoded as nothing.
	var unk strings.Builder
	lo := make([]byte, PageSize)
	lo[0] = 0x4e
	hexLines(&unk, lo, 0)
	if _, err := ParseDump([]byte(unk.String())); err == nil || !strings.Contains(err.Error(), "identifier 0x4e") {
		t.Errorf("identifier 0x4e: %v", err)
	}
	// ethtool's flat SFP dump (512 bytes: A0h then A2h at 0x100), raw.
	raw := sfp28(true).Flat()
	if len(raw) != 512 {
		t.Fatalf("flat SFP dump of %d bytes, want 512", len(raw))
	}
	back, err := ParseDump(raw)
	if err != nil || !near(Decode(back).Lanes[0].RxPowerM, 0.4) {
		t.Errorf("raw SFP dump: %v", err)
	}
}

// Issue 40 row 12: the -30 dBm dark-lane limit. A deactivated lane at or
// below -30 dBm (0.001 mW, 10 in the registers' 0.1 µW) both ways carries
// nothing; one register step above it is lit and stays judged.
func TestIssue40_Row12_DarkLaneLimitIsMinus30dBm(t *testing.T) {
	for _, tc := range []struct {
		raw    uint16
		unused bool
	}{{0, true}, {10, true}, {11, false}} {
		v := cmisVector()
		put16(v.Upper[0x11], 154-128+2*4, tc.raw)
		put16(v.Upper[0x11], 186-128+2*4, tc.raw)
		l := Decode(v).Lanes[4]
		if !l.Deactivated || l.Unused() != tc.unused {
			t.Errorf("deactivated lane at %d × 0.1 µW: unused %v, want %v", tc.raw, l.Unused(), tc.unused)
		}
	}
}

// Issue 40 row 12: SFF-8636 byte 3 holds Rx LOS of lanes 1-4 in bits 0-3
// and Tx LOS in bits 4-7 (Table 6-5); byte 5 the same for LOL.
func TestIssue40_Row12_SFF8636RxVersusTxLOS(t *testing.T) {
	for _, tc := range []struct {
		b3, b5                     byte
		rxLOS, txLOS, rxLOL, txLOL bool
	}{
		{b3: 0x02, rxLOS: true},
		{b3: 0x20, txLOS: true},
		{b5: 0x02, rxLOL: true},
		{b5: 0x20, txLOL: true},
	} {
		v := sff8636Vector()
		v.Lower[3], v.Lower[5] = tc.b3, tc.b5
		m := Decode(v)
		l := m.Lanes[1]
		if l.RxLOS != tc.rxLOS || l.TxLOS != tc.txLOS || l.RxLOL != tc.rxLOL || l.TxLOL != tc.txLOL {
			t.Errorf("byte 3 = %#02x, byte 5 = %#02x: lane 2 %+v", tc.b3, tc.b5, l)
		}
		for _, o := range []int{0, 2, 3} {
			if x := m.Lanes[o]; x.RxLOS || x.TxLOS || x.RxLOL || x.TxLOL {
				t.Errorf("byte 3 = %#02x: lane %d flagged", tc.b3, o+1)
			}
		}
	}
}

// Issue 40 row 12: "past the alarm threshold" is strictly past it. SFF-8472
// and CMIS set a high alarm flag when the value exceeds the threshold and
// a low one when it is below it: a reading equal to a threshold is not
// past it (here, at the 80 °C alarm it is past the 70 °C warning only).
func TestIssue40_Row12_AlarmAtEqualityIsNotPast(t *testing.T) {
	for _, tc := range []struct {
		raw  [2]byte
		want string
	}{
		{[2]byte{80, 0}, "warning"},   // 80 °C = the high alarm
		{[2]byte{80, 1}, "alarm"},     // 80 + 1/256 °C
		{[2]byte{70, 0}, "none"},      // 70 °C = the high warning
		{[2]byte{0xf6, 0}, "warning"}, // -10 °C = the low alarm, under the 0 °C warning
		{[2]byte{0xf5, 0xff}, "alarm"},
	} {
		v := sff8636Vector()
		v.Lower[22], v.Lower[23] = tc.raw[0], tc.raw[1]
		got := "none"
		for _, e := range Excursions(Decode(v), nil) {
			if e.Quantity == Temperature {
				got = e.Level.String()
			}
		}
		if got != tc.want {
			t.Errorf("temperature % x: %s, want %s", tc.raw, got, tc.want)
		}
	}
}

// Issue 40 row 12: a short EEPROM page is refused: not decoded as if its
// missing bytes were zero.
func TestIssue40_Row12_ShortPageRefused(t *testing.T) {
	v := sff8636Vector()
	v.Upper[3] = v.Upper[3][:PageSize-1]
	m := Decode(v)
	if m.Thresholds != (Thresholds{}) || !strings.Contains(strings.Join(m.Missing, ";"), "page 03h") {
		t.Errorf("short page 03h decoded: %+v missing %q", m.Thresholds, m.Missing)
	}
	v = sff8636Vector()
	v.Lower = v.Lower[:PageSize-1]
	if m := Decode(v); m.Spec != SpecUnknown || len(m.Missing) != 1 {
		t.Errorf("short lower page decoded as %+v", m)
	}
	s := sfp28(false)
	s.A2 = s.A2[:100]
	if m := Decode(s); m.TemperatureC != nil || len(m.Missing) != 1 {
		t.Errorf("short A2h decoded: %+v", m)
	}
	if _, err := FromFlat(make([]byte, 3*PageSize-1)); err == nil {
		t.Error("a flat dump ending in a partial page accepted")
	}
	if !errors.Is(fmt.Errorf("x: %w", ErrNoModule), ErrNoModule) {
		t.Fatal("ErrNoModule does not wrap")
	}
}
