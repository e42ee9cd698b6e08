package transceiver

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/module"
)

type boundary struct{}

func (boundary) Run(_ string, _ []string, fn func()) { fn() }
func (boundary) Enter(string)                        {}
func (boundary) Failed(string) bool                  { return false }

// osfp is a CMIS module with the thresholds of a DR4 optic: temperature
// 80/-5/75/0 °C, Rx power 5/0.07/4/0.1 mW (-11.55 dBm alarm, -10 dBm
// warning); lanes 5-8 unsupported.
func osfp(tempC float64, rxDBm [4]float64, los byte) module.Module {
	return module.Decode(osfpMem(tempC, rxDBm, los))
}

func osfpMem(tempC float64, rxDBm [4]float64, los byte) module.Memory {
	lo := make([]byte, module.PageSize)
	lo[0], lo[1], lo[3] = 0x19, 0x50, 3<<1
	put := func(b []byte, at int, vs ...uint16) {
		for i, v := range vs {
			binary.BigEndian.PutUint16(b[at+2*i:], v)
		}
	}
	put(lo, 14, uint16(int16(tempC*256)), 33000)
	up0 := make([]byte, module.PageSize)
	copy(up0[1:], "NVIDIA          ")
	copy(up0[20:], "MMS4X00-NS400   ")
	copy(up0[38:], "MT2251FT00042   ")
	up0[210-128] = 0xf0
	p1 := make([]byte, module.PageSize)
	p1[159-128], p1[160-128] = 0x03, 0x07
	p2 := make([]byte, module.PageSize)
	put(p2, 0, 80<<8, 0xfb00, 75<<8, 0)
	put(p2, 8, 36300, 29700, 34650, 31350)
	put(p2, 48, 50000, 1500, 40000, 2000)
	put(p2, 56, 65000, 5000, 62500, 7500)
	put(p2, 64, 50000, 700, 40000, 1000)
	p11 := make([]byte, module.PageSize)
	copy(p11, []byte{0x44, 0x44, 0x44, 0x44})
	p11[147-128] = los
	for i := range 4 {
		put(p11, 154-128+2*i, 15000)
		put(p11, 170-128+2*i, 50000)
		mw := 0.0
		if rxDBm[i] > -40 {
			mw = math.Pow(10, rxDBm[i]/10)
		}
		put(p11, 186-128+2*i, uint16(mw*10000+0.5))
	}
	return module.Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 1: p1, 2: p2, 0x10: make([]byte, module.PageSize), 0x11: p11}}
}

type pass struct {
	up   bool
	m    module.Module
	err  error
	want []string // "+fatal code", "+warn code", "-code"
}

func run(t *testing.T, c *Check, steps []pass) {
	t.Helper()
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for i, s := range steps {
		obs := &observe.Observation{Now: now, StatePoll: true}
		obs.LinkStory = observe.LinkStory{Open: true, New: true, At: now,
			Modules: []observe.ModuleReading{{Device: "mlx5_8", Port: 1, NetDev: "enp65s0f0np0", Up: s.up, Module: s.m, Err: s.err}}}
		var out []event.Spec
		cy := checks.NewCycle(boundary{})
		cy.Reset(obs, &out)
		c.Run(cy)
		var got []string
		for _, sp := range out {
			switch {
			case sp.IsHealthy:
				got = append(got, "-"+sp.ErrorCode[0])
			case sp.IsFatal:
				got = append(got, "+fatal "+sp.ErrorCode[0])
			default:
				got = append(got, "+warn "+sp.ErrorCode[0])
			}
			if !sp.IsHealthy && (!strings.Contains(sp.Message, "RoCE port mlx5_8 port 1 (enp65s0f0np0) transceiver OSFP NVIDIA MMS4X00-NS400 serial MT2251FT00042: ") ||
				!strings.Contains(sp.Message, "MT2251FT00042)") || sp.Metadata["serial"] != "MT2251FT00042") {
				t.Errorf("pass %d: message %q metadata %v: must name the port, the module and the fix by serial", i, sp.Message, sp.Metadata)
			}
			if sp.CheckName != event.TransceiverCheck || sp.Device != "mlx5_8" || sp.Port != 1 {
				t.Errorf("pass %d: %+v", i, sp)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("pass %d: events %q, want %q", i, got, s.want)
		}
		now = now.Add(time.Minute)
	}
}

var ok4 = [4]float64{0.8, 0.8, 0.8, 0.8}

// DESIGN.md section 7: past the module's warning threshold a non-fatal
// condition naming the lane, the value and the threshold; past its alarm
// threshold fatal; back inside, the clear.
func TestDesign_7_TransceiverThresholds(t *testing.T) {
	c := NewCheck()
	run(t, c, []pass{
		{up: true, m: osfp(45, ok4, 0)},
		{up: true, m: osfp(77, [4]float64{0.8, -10.5, 0.8, 0.8}, 0), want: []string{"+warn module:rxPower:lane2", "+warn module:temperature"}},
		{up: true, m: osfp(81, [4]float64{0.8, -12, 0.8, 0.8}, 0), want: []string{"+fatal module:rxPower:lane2", "+fatal module:temperature"}},
		{up: true, m: osfp(81, [4]float64{0.8, -12, 0.8, 0.8}, 0)},
		{up: true, m: osfp(45, ok4, 0), want: []string{"-module:rxPower:lane2", "-module:temperature"}},
	})
	var out []event.Spec
	obs := &observe.Observation{}
	obs.LinkStory = observe.LinkStory{New: true, Modules: []observe.ModuleReading{{Device: "mlx5_8", Port: 1, NetDev: "enp65s0f0np0", Up: true, Module: osfp(77, [4]float64{0.8, -10.5, 0.8, 0.8}, 0)}}}
	cy := checks.NewCycle(boundary{})
	cy.Reset(obs, &out)
	c.Run(cy)
	for _, sp := range out {
		if sp.ErrorCode[0] == "module:rxPower:lane2" && !strings.Contains(sp.Message, "lane 2 Rx power -10.50 dBm below the module's low warning threshold -10.00 dBm") {
			t.Errorf("message %q does not name the lane, the value and the threshold", sp.Message)
		}
	}
}

// Lanes at or below -30 dBm on an unused lane are not a fault: a port
// that is not up carries nothing, and its dark lanes say nothing; the
// same lanes dark on an up port are fatal.
func TestDesign_7_DarkLanesOfADownPortAreNoFault(t *testing.T) {
	dark := [4]float64{-40, -40, -40, -40}
	run(t, NewCheck(), []pass{
		{up: false, m: osfp(45, dark, 0x0f)},
		{up: false, m: osfp(45, dark, 0x0f)},
		{up: true, m: osfp(45, [4]float64{0.8, 0.8, 0.8, -40}, 0), want: []string{"+fatal module:rxPower:lane4"}},
	})
}

// Latched loss of signal counts only when the read before was also taken
// while the port was up: the first read after a link comes up consumes
// the latches of its training.
func TestDesign_7_LatchedLossOfSignalOnAnUpPort(t *testing.T) {
	run(t, NewCheck(), []pass{
		{up: false, m: osfp(45, ok4, 0x0f)},
		{up: true, m: osfp(45, ok4, 0x0f)}, // the link's training, latched
		{up: true, m: osfp(45, ok4, 0x04), want: []string{"+fatal module:rxLOS:lane3"}},
		{up: true, m: osfp(45, ok4, 0), want: []string{"-module:rxLOS:lane3"}},
	})
}

// A module pulled out (the driver answers EOPNOTSUPP) ends its
// conditions; a read that merely failed keeps them.
func TestDesign_7_ModuleGoneOrUnreadable(t *testing.T) {
	run(t, NewCheck(), []pass{
		{up: true, m: osfp(77, ok4, 0), want: []string{"+warn module:temperature"}},
		{up: true, err: fmt.Errorf("timeout")},
		{up: false, err: fmt.Errorf("netlink: %w", unix.EOPNOTSUPP), want: []string{"-module:temperature"}},
		{up: false, err: fmt.Errorf("netlink: %w", unix.EOPNOTSUPP)},
	})
}

// A restart keeps what was raised, and every raise gets its clear.
func TestDesign_7_TransceiverMemorySurvivesARestart(t *testing.T) {
	c := NewCheck()
	run(t, c, []pass{{up: true, m: osfp(77, ok4, 0), want: []string{"+warn module:temperature"}}})
	raw, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d := NewCheck()
	if dropped := d.Restore(raw); len(dropped) != 0 {
		t.Fatalf("dropped %v", dropped)
	}
	run(t, d, []pass{{up: true, m: osfp(45, ok4, 0), want: []string{"-module:temperature"}}})
	if dropped := NewCheck().Restore([]byte(`{"version":1,"ports":{"x":{"device":"","port":0}}}`)); len(dropped) != 1 {
		t.Errorf("a port no check could write: dropped %v", dropped)
	}
}

// Issue 40 row 5: a module whose page 02h says its high temperature alarm
// is -100 °C (ordered: -120, -110, -105, -100) is healthy at 45 °C: one
// non-fatal "thresholds implausible" finding naming its serial, never a
// fatal one, and the clear when the module is replaced by a sane one.
func TestIssue40_Row5_ImplausibleThresholdsNeverFatal(t *testing.T) {
	mem := osfpMem(45, ok4, 0)
	binary.BigEndian.PutUint16(mem.Upper[2][0:], uint16(0x9c00)) // -100 °C high alarm
	binary.BigEndian.PutUint16(mem.Upper[2][2:], uint16(0x8800)) // -120 °C low alarm
	binary.BigEndian.PutUint16(mem.Upper[2][4:], uint16(0x9700)) // -105 °C high warning
	binary.BigEndian.PutUint16(mem.Upper[2][6:], uint16(0x9200)) // -110 °C low warning
	bad := module.Decode(mem)
	c := NewCheck()
	run(t, c, []pass{
		{up: true, m: bad, want: []string{"+warn module:thresholds"}},
		{up: true, m: bad},
		{up: true, m: osfp(45, ok4, 0), want: []string{"-module:thresholds"}},
	})
	r := observe.ModuleReading{Device: "mlx5_8", Port: 1, NetDev: "enp65s0f0np0", Up: true, Module: bad}
	f := judge(&r, true)
	if len(f) != 1 || f[0].fatal {
		t.Fatalf("findings %+v", f)
	}
	sp := raise(&r, f[0])
	if sp.IsFatal || !strings.Contains(sp.Message, "thresholds implausible") || !strings.Contains(sp.Message, "temperature high alarm -100.0 °C") ||
		!strings.Contains(sp.Message, "serial MT2251FT00042") {
		t.Errorf("event %q fatal %v", sp.Message, sp.IsFatal)
	}
}

// Issue 40 row 9: a passive copper QSFP28 DAC in an up port (byte 147 =
// A0h, byte 220 = 0, a page 03h copied from an optic, zero lane monitors)
// raises nothing: no Rx power, no Tx bias, no temperature from bytes 22-23.
func TestIssue40_Row9_PassiveDACInAnUpPortRaisesNothing(t *testing.T) {
	lo := make([]byte, module.PageSize)
	lo[0], lo[22], lo[23] = 0x11, 0x01, 0x80
	up0 := make([]byte, module.PageSize)
	copy(up0[148-128:], "NVIDIA          ")
	copy(up0[168-128:], "MCP1600-C001E30N")
	copy(up0[196-128:], "MT2301VS01234   ")
	up0[147-128] = 0xa0
	p3 := make([]byte, module.PageSize)
	copy(p3, []byte{0x50, 0, 0xf6, 0, 0x46, 0, 0, 0})
	copy(p3[48:], []byte{0x87, 0x71, 0x01, 0xd3, 0x43, 0xe2, 0x03, 0xa5})
	copy(p3[56:], []byte{0x10, 0x9a, 0x0a, 0xba, 0x0f, 0xa0, 0x0b, 0xb8})
	dac := module.Decode(module.Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 3: p3}})
	run(t, NewCheck(), []pass{{up: true, m: dac}, {up: true, m: dac}})
}

// An empty cage on mlx5 answers EIO, which the reader reports as
// module.ErrNoModule: the module is gone, its conditions end.
func TestIssue40_Row10_EmptyCageEndsConditions(t *testing.T) {
	run(t, NewCheck(), []pass{
		{up: true, m: osfp(77, ok4, 0), want: []string{"+warn module:temperature"}},
		{up: false, err: fmt.Errorf("%w: %w", module.ErrNoModule, unix.EIO), want: []string{"-module:temperature"}},
	})
}
