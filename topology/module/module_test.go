package module

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// near compares decoded floats with the precision the registers have.
func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) < 1e-6
}

func limitsNear(t *testing.T, what string, got *Limits, want [4]float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no thresholds decoded, want %v", what, want)
		return
	}
	g := [4]float64{got.HighAlarm, got.LowAlarm, got.HighWarning, got.LowWarning}
	for i := range g {
		if math.Abs(g[i]-want[i]) > 1e-6 {
			t.Errorf("%s: high alarm, low alarm, high warning, low warning = %v; want %v", what, g, want)
			return
		}
	}
}

func readDump(t *testing.T, name string) Module {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseDump(b)
	if err != nil {
		t.Fatalf("ParseDump(%s): %v", name, err)
	}
	return Decode(m)
}

// A Mellanox QSFP28 SR4 as `ethtool -m sfp42 hex on` printed it (netdev,
// 2019-10-21, testdata/README.md), in a port with no fiber: every lane
// dark, LOS and LOL latched. The thresholds are pinned to what ethtool's
// own decoder printed for the same dump in the same mail.
func TestModule_SFF8636_RealMellanoxQSFP28(t *testing.T) {
	m := readDump(t, "sff8636-mellanox-qsfp28.hex")
	if m.Spec != SpecSFF8636 || m.Type != "QSFP28" || m.Vendor != "Mellanox" || m.PartNumber != "MMA1B00-SS1" ||
		m.Serial != "MT1834FT03846" || m.Revision != "A2" || m.DateCode != "180703" {
		t.Fatalf("identity %+v", m)
	}
	if !near(m.TemperatureC, 39.47265625) || !near(m.VoltageV, 3.3477) {
		t.Errorf("temperature %v, voltage %v; want 39.47 °C (0x2779/256), 3.3477 V (0x82c5 × 100 µV)", *m.TemperatureC, *m.VoltageV)
	}
	limitsNear(t, "temperature", m.Thresholds.TemperatureC, [4]float64{80, -10, 70, 0})
	limitsNear(t, "voltage", m.Thresholds.VoltageV, [4]float64{3.5, 3.1, 3.465, 3.135})
	limitsNear(t, "Tx bias", m.Thresholds.TxBiasMA, [4]float64{8.5, 5.492, 8.0, 6.0})
	limitsNear(t, "Tx power", m.Thresholds.TxPowerMW, [4]float64{3.4673, 0.0724, 1.7378, 0.1445})
	limitsNear(t, "Rx power", m.Thresholds.RxPowerMW, [4]float64{3.4673, 0.0467, 1.7378, 0.0933})
	if len(m.Lanes) != 4 {
		t.Fatalf("%d lanes, want 4", len(m.Lanes))
	}
	for _, l := range m.Lanes {
		if !l.RxLOS || !l.TxLOS || !l.RxLOL || !l.TxLOL || l.TxFault {
			t.Errorf("lane %d flags %+v: want Rx/Tx LOS and LOL latched (bytes 3 and 5 = 0xff), no Tx fault", l.Lane, l)
		}
		if !near(l.RxPowerM, 0) || !l.RxPowerFlags.LowAlarm || !l.RxPowerFlags.LowWarning || l.RxPowerFlags.HighAlarm {
			t.Errorf("lane %d Rx %v flags %+v: want no light, low alarm and warning (bytes 9-10 = 0x55)", l.Lane, *l.RxPowerM, l.RxPowerFlags)
		}
	}
	// Its port is down: no lane is in use, and the module itself is fine.
	if ex := Excursions(m, func(Lane) bool { return false }); len(ex) != 0 {
		t.Errorf("excursions of a module in a down port: %v", ex)
	}
	// Were the port up, every lane would be dark past its low alarms.
	ex := Excursions(m, nil)
	if len(ex) != 12 {
		t.Fatalf("excursions of an up port's dark module: %d, want 12 (bias, Tx and Rx power on 4 lanes): %v", len(ex), ex)
	}
	want := "lane 1 Rx power no light (0 mW) below the module's low alarm threshold -13.31 dBm"
	found := false
	for _, e := range ex {
		if e.Level != Alarm || e.High {
			t.Errorf("%v: want low alarms only", e)
		}
		found = found || e.String() == want
	}
	if !found {
		t.Errorf("no excursion reads %q: %v", want, ex)
	}
}

// A 400G-class QSFP-DD (Eoptolink EOLD-168HG-10-1) as a Junos `show picd`
// dump printed it, every page in its own section (testdata/README.md): a
// healthy module, all eight lanes lit.
func TestModule_CMIS_RealEoptolinkQSFPDD(t *testing.T) {
	m := readDump(t, "cmis-eoptolink-qsfpdd.txt")
	if m.Spec != SpecCMIS || m.Type != "QSFP-DD" || m.Vendor != "Eoptolink" || m.PartNumber != "EOLD-168HG-10-1" ||
		m.Serial != "DR4R030015" || m.Revision != "01" || m.State != "ModuleReady" || m.Flat {
		t.Fatalf("identity %+v", m)
	}
	if !near(m.TemperatureC, float64(0x31be)/256) || !near(m.VoltageV, 3.3173) {
		t.Errorf("temperature %v, voltage %v", *m.TemperatureC, *m.VoltageV)
	}
	limitsNear(t, "temperature", m.Thresholds.TemperatureC, [4]float64{78, -8, 73, -3})
	limitsNear(t, "voltage", m.Thresholds.VoltageV, [4]float64{3.63, 2.9700, 3.465, 3.135})
	limitsNear(t, "Tx power", m.Thresholds.TxPowerMW, [4]float64{5.1286, 0.3388, 4.0738, 0.4266})
	limitsNear(t, "Tx bias", m.Thresholds.TxBiasMA, [4]float64{130, 10, 125, 15})
	limitsNear(t, "Rx power", m.Thresholds.RxPowerMW, [4]float64{5.7544, 0.0708, 4.5709, 0.0891})
	if len(m.Lanes) != 8 {
		t.Fatalf("%d lanes, want 8", len(m.Lanes))
	}
	l1 := m.Lanes[0]
	if !near(l1.TxPowerM, 1.4866) || !near(l1.TxBiasMA, 110.2) || !near(l1.RxPowerM, 2.4581) {
		t.Errorf("lane 1: Tx %v mW, bias %v mA, Rx %v mW; want 1.4866, 110.2, 2.4581", *l1.TxPowerM, *l1.TxBiasMA, *l1.RxPowerM)
	}
	for _, l := range m.Lanes {
		if l.RxLOS || l.RxLOL || l.TxLOS || l.TxLOL || l.TxFault || l.Unused() {
			t.Errorf("lane %d: %+v; want a clean, used lane", l.Lane, l)
		}
	}
	if ex := Excursions(m, nil); len(ex) != 0 {
		t.Errorf("a healthy module's excursions: %v", ex)
	}
	if got := PagesWanted(m2lower(t, "cmis-eoptolink-qsfpdd.txt")); !bytes.Equal(got, []byte{1, 2, 0x10, 0x11}) {
		t.Errorf("pages wanted %x", got)
	}
}

func m2lower(t *testing.T, name string) []byte {
	b, _ := os.ReadFile("testdata/" + name)
	m, err := ParseDump(b)
	if err != nil {
		t.Fatal(err)
	}
	return m.Lower
}

// cmisVector builds a paged CMIS module by hand, each field placed at the
// byte OIF-CMIS 5.x assigns it, values chosen so every conversion can be
// checked on paper.
func cmisVector() Memory {
	lo := make([]byte, PageSize)
	lo[0] = 0x18           // QSFP-DD
	lo[1] = 0x50           // CMIS 5.0
	lo[3] = 3 << 1         // ModuleReady (Table 8-7)
	lo[14], lo[15] = 74, 0 // 74.0 °C: past the 73 °C warning, under the 78 °C alarm
	lo[16], lo[17] = 0x80, 0xe8
	up0 := make([]byte, PageSize)
	copy(up0[129-128:], "ACME OPTICS     ")
	copy(up0[148-128:], "OSFP-800G-2xDR4 ")
	copy(up0[164-128:], "A1")
	copy(up0[166-128:], "SN-TEST-0001    ")
	up0[210-128] = 0xc0 // media lanes 7 and 8 unsupported
	p1 := make([]byte, PageSize)
	p1[159-128] = 0x03        // temperature and Vcc monitored
	p1[160-128] = 0x07 | 1<<3 // Tx bias, Tx and Rx power; bias × 2
	p2 := make([]byte, PageSize)
	put := func(b []byte, at int, vs ...uint16) {
		for i, v := range vs {
			b[at-128+2*i], b[at-128+2*i+1] = byte(v>>8), byte(v)
		}
	}
	put(p2, 128, 78<<8, 0xf800, 73<<8, 0xfd00) // 78, -8, 73, -3 °C
	put(p2, 136, 36300, 29700, 34650, 31350)   // 3.63, 2.97, 3.465, 3.135 V
	put(p2, 176, 50000, 3000, 40000, 4000)     // Tx power 5, 0.3, 4, 0.4 mW
	put(p2, 184, 30000, 2500, 27500, 3750)     // bias 2 µA × 2: 120, 10, 110, 15 mA
	put(p2, 192, 50000, 708, 45000, 891)       // Rx power 5, 0.0708, 4.5, 0.0891 mW
	p10 := make([]byte, PageSize)
	p10[130-128] = 0x20 // lane 6's transmitter disabled
	p11 := make([]byte, PageSize)
	p11[128-128], p11[129-128], p11[130-128], p11[131-128] = 0x44, 0x44, 0x41, 0x11 // lanes 5, 7, 8 deactivated (low nibble: the odd lane)
	for i := range 8 {
		put(p11, 154+2*i, 15000) // Tx 1.5 mW
		put(p11, 170+2*i, 25000) // bias 25000 × 2 µA × 2 = 100 mA
		put(p11, 186+2*i, 20000) // Rx 2 mW
	}
	put(p11, 186+2*2, 800) // lane 3 Rx 0.08 mW: under the 0.0891 warning, over the 0.0708 alarm
	put(p11, 186+2*3, 500) // lane 4 Rx 0.05 mW: under the alarm
	put(p11, 154+2*4, 0)   // lane 5 dark both ways and deactivated: unused
	put(p11, 186+2*4, 0)
	put(p11, 186+2*5, 0) // lane 6 disabled: no light received is not judged
	p11[147-128] = 0x02  // lane 2 Rx LOS latched
	p11[148-128] = 0x04  // lane 3 Rx LOL latched
	p11[135-128] = 0x01  // lane 1 Tx fault latched
	lo[9] = 0x04         // temperature high warning latched (bit 2)
	return Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 1: p1, 2: p2, 0x10: p10, 0x11: p11}}
}

func TestModule_CMIS_HandVector(t *testing.T) {
	m := Decode(cmisVector())
	if m.Vendor != "ACME OPTICS" || m.Serial != "SN-TEST-0001" || m.State != "ModuleReady" {
		t.Fatalf("identity %+v", m)
	}
	if !near(m.TemperatureC, 74) || !near(m.VoltageV, 3.3) || !m.Flags.Temperature.HighWarning || m.Flags.Temperature.HighAlarm {
		t.Errorf("module: %v °C, %v V, flags %+v", *m.TemperatureC, *m.VoltageV, m.Flags)
	}
	limitsNear(t, "Tx bias (× 2 multiplier)", m.Thresholds.TxBiasMA, [4]float64{120, 10, 110, 15})
	l := m.Lanes
	if !near(l[0].TxBiasMA, 100) || !l[0].TxFault || !l[1].RxLOS || !l[2].RxLOL {
		t.Errorf("lanes 1-3: %+v %+v %+v", l[0], l[1], l[2])
	}
	if !l[4].Deactivated || !l[4].Unused() || !l[5].Disabled || !l[5].Unused() || !l[6].Unsupported || !l[7].Unsupported {
		t.Errorf("lanes 5-8 unused flags: %+v %+v %+v %+v", l[4], l[5], l[6], l[7])
	}
	if l[0].Deactivated || l[2].Unused() {
		t.Errorf("lanes 1 and 3 are in use: %+v %+v", l[0], l[2])
	}
	var got []string
	for _, e := range Excursions(m, nil) {
		got = append(got, e.String())
	}
	want := []string{
		"temperature 74.0 °C above the module's high warning threshold 73.0 °C",
		"lane 3 Rx power -10.97 dBm below the module's low warning threshold -10.50 dBm",
		"lane 4 Rx power -13.01 dBm below the module's low alarm threshold -11.50 dBm",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("excursions\n got %q\nwant %q", got, want)
	}
}

// sff8636Vector: a paged QSFP28 whose module is cold and whose lane 2 is
// past its Tx bias high alarm, at the bytes of SFF-8636 rev 2.11.
func sff8636Vector() Memory {
	lo := make([]byte, PageSize)
	lo[0] = 0x11
	lo[22], lo[23] = 0xfb, 0x00 // -5.0 °C: under the 0 °C warning, over the -10 °C alarm
	lo[26], lo[27] = 0x80, 0xe8 // 3.3 V
	for i := range 4 {
		lo[34+2*i], lo[35+2*i] = 0x27, 0x10 // Rx 1.0 mW
		lo[42+2*i], lo[43+2*i] = 0x0d, 0xac // bias 3500 × 2 µA = 7 mA
		lo[50+2*i], lo[51+2*i] = 0x27, 0x10 // Tx 1.0 mW
	}
	lo[44], lo[45] = 0x11, 0x94 // lane 2 bias 4500 × 2 µA = 9 mA: past the 8.5 mA alarm
	lo[86] = 0x08               // lane 4 disabled
	lo[56], lo[57] = 0, 0       // and dark
	up0 := make([]byte, PageSize)
	copy(up0[148-128:], "ACME            ")
	copy(up0[196-128:], "Q28-0001        ")
	up0[220-128] = 0x0c // average Rx power, Tx power measured
	p3 := make([]byte, PageSize)
	copy(p3, []byte{0x50, 0, 0xf6, 0, 0x46, 0, 0, 0}) // 80, -10, 70, 0 °C
	copy(p3[48:], []byte{0x87, 0x71, 0x01, 0xd3, 0x43, 0xe2, 0x03, 0xa5})
	copy(p3[56:], []byte{0x10, 0x9a, 0x0a, 0xba, 0x0f, 0xa0, 0x0b, 0xb8})
	copy(p3[64:], []byte{0x87, 0x71, 0x02, 0xd4, 0x43, 0xe2, 0x05, 0xa5})
	return Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 3: p3}}
}

func TestModule_SFF8636_HandVector(t *testing.T) {
	m := Decode(sff8636Vector())
	var got []string
	for _, e := range Excursions(m, nil) {
		got = append(got, e.String())
	}
	want := []string{
		"temperature -5.0 °C below the module's low warning threshold 0.0 °C",
		"lane 2 Tx laser bias 9.00 mA above the module's high alarm threshold 8.50 mA",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("excursions\n got %q\nwant %q", got, want)
	}
	if !m.Lanes[3].Disabled {
		t.Error("lane 4's Tx disable bit (byte 86 bit 3) not decoded")
	}
}

// Passive copper: flat memory, no thresholds, no pages to ask for, and
// nothing judged whatever its zero readings say.
func TestModule_FlatCopperIsNotJudged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lower []byte
	}{
		{"SFF-8636 Flat_mem", func() []byte { b := make([]byte, PageSize); b[0], b[2] = 0x11, 0x04; return b }()},
		{"CMIS MemoryModel flat", func() []byte { b := make([]byte, PageSize); b[0], b[2] = 0x18, 0x80; return b }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := PagesWanted(tc.lower); p != nil {
				t.Errorf("pages wanted %x, want none", p)
			}
			m := Decode(Memory{Lower: tc.lower, Upper: map[byte][]byte{0: make([]byte, PageSize)}})
			if !m.Flat || m.Thresholds != (Thresholds{}) || len(Excursions(m, nil)) != 0 {
				t.Errorf("flat module decoded as %+v", m)
			}
		})
	}
}

func TestModule_LimitsNotTrustedWhenAbsentOrInconsistent(t *testing.T) {
	for _, b := range [][]byte{
		make([]byte, 8), bytes.Repeat([]byte{0xff}, 8),
		{0, 10, 0, 20, 0, 5, 0, 15}, // high alarm under the low alarm
	} {
		if l, _ := limits(RxPower, b, powerMW); l != nil {
			t.Errorf("limits(% x) = %+v, want none", b, *l)
		}
	}
}

// The raw form and the hex form of one dump decode the same, and a Memory
// survives its flat layout.
func TestModule_RawAndHexAgree(t *testing.T) {
	b, _ := os.ReadFile("testdata/sff8636-mellanox-qsfp28.hex")
	fromHex, err := ParseDump(b)
	if err != nil {
		t.Fatal(err)
	}
	raw := fromHex.Flat()
	if len(raw) != 640 {
		t.Fatalf("flat SFF-8636 dump %d bytes, want 640", len(raw))
	}
	fromRaw, err := ParseDump(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(Decode(fromHex), Decode(fromRaw)) {
		t.Error("raw and hex forms decode differently")
	}
	v := cmisVector()
	delete(v.Upper, 0x10)
	back, err := FromFlat(v.Flat())
	if err != nil || len(v.Flat()) != 768 {
		t.Fatalf("CMIS flat dump: %d bytes, %v", len(v.Flat()), err)
	}
	// The missing page 10h comes back as zeros: no lane disabled.
	if d := Decode(back); d.Lanes[5].Disabled || !reflect.DeepEqual(d.Lanes[0], Decode(v).Lanes[0]) {
		t.Errorf("flat round trip: %+v", d.Lanes[5])
	}
}

// `ethtool -m DEV page 3 hex on` prints offsets 0x80-0xff without the page:
// an annotation line says which page the lines after it belong to.
func TestModule_HexPerPageAnnotated(t *testing.T) {
	v := sff8636Vector()
	var sb strings.Builder
	dump := func(b []byte, base int) {
		for i := 0; i < len(b); i += 16 {
			sb.WriteString("0x" + strings.ToLower(strings.TrimLeft(hex4(base+i), "")) + ":\t\t")
			for j := range 16 {
				sb.WriteString(hex2(b[i+j]) + " ")
			}
			sb.WriteString("\n")
		}
	}
	sb.WriteString("Offset\t\tValues\n------\t\t------\n")
	dump(v.Lower, 0)
	dump(v.Upper[0], 0x80)
	sb.WriteString("# ethtool -m eth2 page 3 hex on\n")
	dump(v.Upper[3], 0x80)
	m, err := ParseDump([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(Decode(m), Decode(v)) {
		t.Errorf("annotated hex decoded as %+v", Decode(m))
	}
}

func hex2(b byte) string { const h = "0123456789abcdef"; return string([]byte{h[b>>4], h[b&15]}) }
func hex4(v int) string  { return hex2(byte(v>>8)) + hex2(byte(v)) }

func TestModule_ParseDumpRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"prose", []byte("no module here\n")},
		{"lower page incomplete", []byte("0x0000: 11 07 00\n")},
		{"raw of a partial page", append([]byte{0x11}, make([]byte, 200)...)},
		{"larger than any module", make([]byte, MaxDump+1)},
		{"offset beyond any module", []byte("0x7fffffff: 00\n")},
	} {
		if m, err := ParseDump(tc.in); err == nil {
			t.Errorf("%s: ParseDump = %+v, want an error", tc.name, m)
		}
	}
	if _, err := ParseDump([]byte("hello\n")); !errors.Is(err, ErrNotDump) {
		t.Errorf("prose: %v, want ErrNotDump", err)
	}
}

// What `nichealthctl module decode --json` prints is valid JSON whatever
// the module: no NaN or infinity reaches the encoder.
func TestModule_JSONAlwaysEncodes(t *testing.T) {
	for _, m := range []Module{Decode(cmisVector()), Decode(sff8636Vector()), Decode(Memory{})} {
		if _, err := json.Marshal(m); err != nil {
			t.Errorf("json: %v", err)
		}
	}
}

func FuzzParseDump(f *testing.F) {
	for _, name := range []string{"sff8636-mellanox-qsfp28.hex", "cmis-eoptolink-qsfpdd.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(cmisVector().Flat())
	f.Add(sff8636Vector().Flat())
	f.Add([]byte("Upper page 11h\n0x80: ff ff\n"))
	f.Add(sfp28(true).Flat())
	var sb strings.Builder
	sb.WriteString("A0h\n")
	hexLines(&sb, sfp28(false).Lower, 0)
	sb.WriteString("A2h\n")
	hexLines(&sb, sfp28(false).A2, 0)
	f.Add([]byte(sb.String()))
	f.Add(passiveDAC().Flat())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseDump(b)
		if err != nil {
			return
		}
		d := Decode(m)
		for _, e := range Excursions(d, nil) {
			_ = e.String()
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("json: %v", err)
		}
		back, err := FromFlat(m.Flat())
		if err != nil {
			t.Fatalf("flat layout of a parsed dump does not parse: %v", err)
		}
		if !bytes.Equal(back.Lower, m.Lower) {
			t.Fatal("lower page changed through the flat layout")
		}
	})
}
