package latch

import (
	"encoding/json"
	"strings"
	"testing"
)

// The key forms the state file has held: "<device>/<port>" (far end,
// RoCE) and seed 6.6's "<device>_<port>" (port states, transceivers).
func TestPort_ParsesWhatChecksWroteAndNothingElse(t *testing.T) {
	written := map[string]Port{"mlx5_0/1": PortOf("mlx5_0", 1), "mlx5_10/2": PortOf("mlx5_10", 2), "ibp12s0/255": PortOf("ibp12s0", 255)}
	for in, want := range written {
		if p, ok := ParsePort(in); !ok || p != want || p.String() != in || !p.Valid() {
			t.Errorf("ParsePort(%q) = %+v, %v; want %+v", in, p, ok, want)
		}
	}
	// A device name holds no '/', ':' or blank; no port 0; one byte; the
	// number as a check writes it.
	for _, in := range []string{"a/b/1", "mlx5_0/0", "mlx5_0/256", "mlx5_0/01", "mlx5_0/+1", "mlx5_0/-1", "mlx5_0/", "/1", "mlx5_0", "mlx5 0/1", "mlx5:0/1", ""} {
		if p, ok := ParsePort(in); ok || p.Valid() {
			t.Errorf("ParsePort(%q) = %+v, %v; want no port", in, p, ok)
		}
	}
	if p, why := ParseUnderscored("mlx5_0_1"); why != "" || p != PortOf("mlx5_0", 1) || p.Underscored() != "mlx5_0_1" || p.String() != "mlx5_0/1" {
		t.Errorf(`ParseUnderscored("mlx5_0_1") = %+v, %q`, p, why)
	}
	for in, want := range map[string]string{
		"mlx5":      "key is not <device>_<port>",
		"_1":        "key is not <device>_<port>",
		"mlx5_0_x":  "bad port number",
		"mlx5_0_0":  "port 0 is not 1 to 255",
		"mlx5_0_-1": "negative port",
		"ml/x_1":    "bad device name",
	} {
		if p, why := ParseUnderscored(in); why != want || p.Valid() {
			t.Errorf("ParseUnderscored(%q) = %+v, %q; want %q", in, p, why, want)
		}
	}
	if PortOf("mlx5_0", 0).Valid() || PortOf("", 1).Valid() || !PortOf("mlx5_0", 1).Valid() {
		t.Error("Valid accepts a port 0 or no device, or refuses mlx5_0 port 1")
	}
}

// A map keyed by Port persists as the object keyed "<device>/<port>" the
// far-end and RoCE sections always were, in the same order; a key that is
// not a port is kept apart, as read, for the section's validation to drop
// and name, instead of failing the whole section.
func TestPort_MapKeyPersistsInItsTextForm(t *testing.T) {
	const in = `{"":5,"mlx5_0/0":4,"mlx5_0/1":1,"mlx5_10/2":2,"mlx5_2/1":3,"x":6}`
	var m map[Port]int
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatalf("a bad key failed the section: %v", err)
	}
	if len(m) != 6 || m[PortOf("mlx5_0", 1)] != 1 || m[PortOf("mlx5_10", 2)] != 2 {
		t.Fatalf("read %v", m)
	}
	var bad []string
	for k := range m {
		if !k.Valid() {
			bad = append(bad, k.String())
		}
	}
	if len(bad) != 3 {
		t.Fatalf("not ports: %q, want the three that are not", bad)
	}
	out, err := json.Marshal(m)
	if err != nil || string(out) != in {
		t.Fatalf("saved %s, %v; want %s", out, err, in)
	}
}

func TestPort_RenamedMovesOnlyTheDevice(t *testing.T) {
	if p, ok := PortOf("mlx5_0", 2).Renamed("mlx5_0", "ib0"); !ok || p != PortOf("ib0", 2) {
		t.Errorf("Renamed = %v, %v", p, ok)
	}
	if _, ok := PortOf("mlx5_1", 2).Renamed("mlx5_0", "ib0"); ok {
		t.Error("renamed another device's port")
	}
}

// The text of any key read back is saved again as it was read (nothing
// is invented for a key a hand edit broke), and a key that parses prints
// as what was parsed.
func FuzzPort_TextRoundTrip(f *testing.F) {
	for _, s := range []string{"mlx5_0/1", "mlx5_0/01", "a/b/1", "", "mlx5_0_1", "x/255", "x/256"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p Port
		if err := p.UnmarshalText([]byte(s)); err != nil {
			t.Fatal(err)
		}
		b, err := p.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("%q saved as %q, %v", s, b, err)
		}
		if q, ok := ParsePort(s); ok != p.Valid() || ok && q != p {
			t.Fatalf("%q: parsed %+v %v, read %+v", s, q, ok, p)
		}
		if q, why := ParseUnderscored(s); why == "" && (!q.Valid() || q.Underscored() != s || strings.Contains(q.Device, "/")) {
			t.Fatalf("%q: underscored %+v", s, q)
		}
	})
}
