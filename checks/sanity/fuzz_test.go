package sanity

import (
	"strings"
	"testing"
)

// FuzzParseLinkSpeed: any bytes in current_link_speed give a positive
// speed, "unknown", or an error; never a panic or a negative speed.
func FuzzParseLinkSpeed(f *testing.F) {
	for _, s := range []string{"32.0 GT/s PCIe\n", "8 GT/s", "2.5 GT/s PCIe", "Unknown", "Unknown speed", "", "NaN GT/s", "-1 GT/s", "1e400 GT/s"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, text, err := parseLinkSpeed(b)
		if err != nil {
			if g != 0 || text != "" {
				t.Fatalf("error with a value: %v %q %v", g, text, err)
			}
			return
		}
		if g < 0 || g != g || (g > 0) != (text != "") || (text != "" && !strings.HasSuffix(text, " GT/s")) {
			t.Fatalf("parseLinkSpeed(%q) = %v, %q", b, g, text)
		}
	})
}

// FuzzParseLinkWidth: a width is a lane count in 0..64 or an error.
func FuzzParseLinkWidth(f *testing.F) {
	for _, s := range []string{"16\n", "x8", "0", "-4", "", "99999999999999999999"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := parseLinkWidth(b)
		if err == nil && (w < 0 || w > 64) {
			t.Fatalf("parseLinkWidth(%q) = %d", b, w)
		}
	})
}

// FuzzSMLID: whatever state and sm_lid hold, SMLID never panics and only
// ever reports ACTIVE InfiniBand ports with a zero LID.
func FuzzSMLID(f *testing.F) {
	f.Add("4: ACTIVE", "0x0")
	f.Add("ACTIVE", "0")
	f.Add("4: ACTIVE", "0x1")
	f.Add("1: DOWN", "0x0")
	f.Add("4:", "0x")
	f.Fuzz(func(t *testing.T, state, smlid string) {
		fd := SMLID("mlx5_0", 1, "InfiniBand", linkOf(state), smlid)
		if fd == nil {
			return
		}
		if v, ok := parseLID(smlid); !ok || v != 0 || fd.Kind != KindSMLID {
			t.Fatalf("finding for state %q sm_lid %q: %+v", state, smlid, fd)
		}
		if SMLID("mlx5_0", 1, "Ethernet", linkOf(state), smlid) != nil {
			t.Fatal("finding on a RoCE port")
		}
	})
}
