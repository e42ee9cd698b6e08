package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
)

func TestParseCounter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0\n", 0, true}, {"65535\n", 65535, true}, {" 42 ", 42, true},
		{"18446744073709551615\n", 1<<64 - 1, true},
		{"18446744073709551616\n", 0, false}, // over 64 bits
		{"N/A (no PMA)\n", 0, false}, {"", 0, false}, {"\n", 0, false},
		{"-1\n", 0, false}, {"12a\n", 0, false}, {"1e3", 0, false},
	} {
		got, err := ParseCounter([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseCounter(%q) = %d, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrUnreadable) {
			t.Errorf("ParseCounter(%q): error %v is not ErrUnreadable", tc.in, err)
		}
	}
}

// Seed 3.1: the state files print "N: NAME".
func TestLinkState_3_1_ParseStates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		phys bool
		id   int
		name string
		ok   bool
	}{
		{"4: ACTIVE\n", false, StateActive, "ACTIVE", true},
		{"1: DOWN\n", false, StateDown, "DOWN", true},
		{"2: INIT", false, StateInit, "INIT", true},
		{"5: LinkUp\n", true, PhysLinkUp, "LinkUp", true},
		{"3: Disabled\n", true, PhysDisabled, "Disabled", true},
		{"6: LinkErrorRecovery\n", true, PhysLinkErrorRecovery, "LinkErrorRecovery", true},
		{"4: PortConfigurationTraining\n", true, PhysTraining, "PortConfigurationTraining", true},
		{"7: Phy Test\n", true, PhysPhyTest, "Phy Test", true},
		{"4", false, StateActive, "ACTIVE", true},
		{"ACTIVE", false, StateActive, "ACTIVE", true},
		{"9: FUTURE\n", false, 9, "FUTURE", true},
		{"", false, 0, "", false}, {"x: DOWN", false, 0, "", false}, {"garbage", true, 0, "", false},
		{"999: BIG", false, 0, "", false},
	} {
		f := ParseState
		if tc.phys {
			f = ParsePhysState
		}
		got, err := f([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && (got.ID != tc.id || got.Name != tc.name)) {
			t.Errorf("parse(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in           string
		gbps         float64
		width, speed string
		ok           bool
	}{
		{"400 Gb/sec (4X NDR)\n", 400, "4X", "NDR", true},
		{"25 Gb/sec (1X EDR)", 25, "1X", "EDR", true},
		{"100 Gb/sec\n", 100, "", "", true},
		{"2.5 Gb/sec (1X SDR)", 2.5, "1X", "SDR", true},
		{"fast", 0, "", "", false}, {"400 Mb/sec", 0, "", "", false}, {"", 0, "", "", false},
		{"NaN Gb/sec", 0, "", "", false},
	} {
		got, err := ParseRate([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && (got.Gbps != tc.gbps || got.Width != tc.width || got.Speed != tc.speed)) {
			t.Errorf("ParseRate(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func TestSteadyParsesDoNotAllocate(t *testing.T) {
	st, ph, c := []byte("4: ACTIVE\n"), []byte("5: LinkUp\n"), []byte("123456\n")
	if n := testing.AllocsPerRun(100, func() {
		ParseState(st)
		ParsePhysState(ph)
		ParseCounter(c)
	}); n != 0 {
		t.Fatalf("%v allocs per parse", n)
	}
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE\n", "5: LinkUp", "", ":", "1:", "255: X", "N/A"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fn := range []func([]byte) (PortState, error){ParseState, ParsePhysState} {
			ps, err := fn(b)
			if err == nil && (ps.ID < 0 || ps.ID > 255) {
				t.Fatalf("id %d out of range", ps.ID)
			}
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)\n", "100 Gb/sec", "1 Gb/sec ()", "( Gb/sec"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRate(b)
		if err == nil && (r.Gbps < 0 || r.Gbps != r.Gbps) {
			t.Fatalf("rate %v", r.Gbps)
		}
	})
}

func FuzzParseCounterAndInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "18446744073709551615", "N/A (no PMA)"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Oracle: the standard library's decimal parser on the trimmed
		// text. A counter is digits only (no sign, no underscore, no
		// base prefix) and at most 20 of them.
		trimmed := string(bytes.TrimSpace(b))
		want, werr := strconv.ParseUint(trimmed, 10, 64)
		got, err := ParseCounter(b)
		switch {
		case err == nil && (werr != nil || got != want):
			t.Fatalf("ParseCounter(%q) = %d; strconv says %d, %v", b, got, want, werr)
		case err == nil && mustParseCounter(t, []byte(strconv.FormatUint(got, 10)+"\n")) != got:
			t.Fatalf("ParseCounter(%q) = %d does not survive a format/parse round trip", b, got)
		case err != nil && werr == nil && len(trimmed) <= 20:
			t.Fatalf("ParseCounter(%q) refused a valid counter: %v", b, err)
		case err != nil && !errors.Is(err, ErrUnreadable):
			t.Fatalf("ParseCounter(%q) error %v does not wrap ErrUnreadable", b, err)
		}
		n, err := ParseInt(b)
		wantInt, werr := strconv.Atoi(trimmed)
		if (err == nil) != (werr == nil) || (err == nil && n != wantInt) {
			t.Fatalf("ParseInt(%q) = %d, %v; strconv says %d, %v", b, n, err, wantInt, werr)
		}
		if err != nil && !errors.Is(err, ErrUnreadable) {
			t.Fatalf("ParseInt(%q) error %v does not wrap ErrUnreadable", b, err)
		}
	})
}

// mustParseCounter is ParseCounter for a value known to be valid.
func mustParseCounter(t *testing.T, b []byte) uint64 {
	t.Helper()
	v, err := ParseCounter(b)
	if err != nil {
		t.Fatalf("ParseCounter(%q): %v", b, err)
	}
	return v
}

func TestSysfs_GUIDs(t *testing.T) {
	if g, err := ParseNodeGUID([]byte("b83f:d203:00a0:b010\n")); err != nil || FormatGUID(g) != "0xb83fd20300a0b010" {
		t.Errorf("node_guid: %x %v", g, err)
	}
	if g, err := ParseGIDInterfaceID([]byte("fe80:0000:0000:0000:0002:c903:0029:3e1f\n")); err != nil || FormatGUID(g) != "0x0002c90300293e1f" {
		t.Errorf("gid: %x %v", g, err)
	}
	for _, bad := range []string{"", "b83f:d203:00a0:b01", "b83f:d203:00a0:b01g", "b83fd20300a0b010xxx"} {
		if _, err := ParseNodeGUID([]byte(bad)); err == nil {
			t.Errorf("node_guid %q accepted", bad)
		}
	}
	for _, bad := range []string{"fe80::1", "fe80:0000:0000:0000:0002:c903:0029:3e1", "fe80-0000:0000:0000:0002:c903:0029:3e1f", "ze80:0000:0000:0000:0002:c903:0029:3e1f"} {
		if _, err := ParseGIDInterfaceID([]byte(bad)); err == nil {
			t.Errorf("gid %q accepted", bad)
		}
	}
}

func FuzzParseGUIDs(f *testing.F) {
	f.Add([]byte("b83f:d203:00a0:b010\n"))
	f.Add([]byte("fe80:0000:0000:0000:0002:c903:0029:3e1f\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if g, err := ParseNodeGUID(b); err == nil {
			if back, err := ParseNodeGUID([]byte(fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff))); err != nil || back != g {
				t.Fatalf("node_guid %q -> %x does not round-trip", b, g)
			}
		}
		ParseGIDInterfaceID(b)
	})
}
