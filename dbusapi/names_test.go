package dbusapi

import (
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
)

func TestDBus_5_EscapePathElement(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mlx5_0", "mlx5_5f0"},
		{"mlx5_bond_0", "mlx5_5fbond_5f0"},
		{"ibP16p3s0", "ibP16p3s0"},
		{"", "_"},
		{"a.b-c", "a_2eb_2dc"},
		{"_", "_5f"},
		{"ü", "_c3_bc"},
		{"0000:3b:00.0", "0000_3a3b_3a00_2e0"},
	}
	for _, c := range cases {
		got := EscapePathElement(c.in)
		if got != c.want {
			t.Errorf("EscapePathElement(%q) = %q, want %q", c.in, got, c.want)
		}
		back, err := UnescapePathElement(got)
		if err != nil || back != c.in {
			t.Errorf("UnescapePathElement(%q) = %q, %v; want %q", got, back, err, c.in)
		}
	}
}

func TestDBus_5_UnescapeRejectsForeignForms(t *testing.T) {
	for _, in := range []string{"", "a_", "a_5", "a_zz", "a_41" /* 'A' never escaped */, "a_5F" /* upper-case hex */, "a-b", "a/b", "__"} {
		if got, err := UnescapePathElement(in); err == nil {
			t.Errorf("UnescapePathElement(%q) = %q, want an error", in, got)
		}
	}
}

func TestDBus_5_PortPath(t *testing.T) {
	cases := []struct {
		dev  string
		port int
		want dbus.ObjectPath
	}{
		{"mlx5_0", 1, "/org/nichealth/NicHealth1/port/mlx5_5f0_1"},
		{"mlx5_bond_0", 2, "/org/nichealth/NicHealth1/port/mlx5_5fbond_5f0_2"},
		{"ibp3s0", 12, "/org/nichealth/NicHealth1/port/ibp3s0_12"},
		{"", 1, "/org/nichealth/NicHealth1/port/__1"},
	}
	for _, c := range cases {
		got := PortPath(c.dev, c.port)
		if got != c.want || !got.IsValid() {
			t.Errorf("PortPath(%q,%d) = %q (valid %v), want %q", c.dev, c.port, got, got.IsValid(), c.want)
		}
		dev, port, err := ParsePortPath(got)
		if err != nil || dev != c.dev || port != c.port {
			t.Errorf("ParsePortPath(%q) = %q,%d,%v", got, dev, port, err)
		}
	}
	for _, bad := range []dbus.ObjectPath{"/org/nichealth/NicHealth1", "/org/nichealth/NicHealth1/port/mlx5", "/org/nichealth/NicHealth1/port/mlx5_5f0_x",
		"/org/nichealth/NicHealth1/port/mlx5_5f0_01", "/org/nichealth/NicHealth1/port/_1", "/org/nichealth/NicHealth1/port/a/b_1", "/other/mlx5_5f0_1"} {
		if d, p, err := ParsePortPath(bad); err == nil {
			t.Errorf("ParsePortPath(%q) = %q,%d; want an error", bad, d, p)
		}
	}
}

func FuzzEscapePathElement(f *testing.F) {
	for _, s := range []string{"mlx5_0", "", "_", "a/b", "\x00\xff", "mlx5_bond_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapePathElement(s)
		if p := dbus.ObjectPath("/" + e); !p.IsValid() {
			t.Fatalf("EscapePathElement(%q) = %q is not a valid path element", s, e)
		}
		back, err := UnescapePathElement(e)
		if err != nil || back != s {
			t.Fatalf("round trip of %q via %q gave %q, %v", s, e, back, err)
		}
		pp := PortPath(s, 7)
		if !pp.IsValid() {
			t.Fatalf("PortPath(%q) = %q invalid", s, pp)
		}
		if d, p, err := ParsePortPath(pp); err != nil || d != s || p != 7 {
			t.Fatalf("ParsePortPath(%q) = %q,%d,%v", pp, d, p, err)
		}
	})
}

func FuzzUnescapePathElement(f *testing.F) {
	for _, s := range []string{"mlx5_5f0", "_", "a_zz", "_5f_5f", "x_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := UnescapePathElement(s)
		if err != nil {
			return
		}
		// Whatever decodes must be the one canonical spelling.
		if e := EscapePathElement(d); e != s {
			t.Fatalf("UnescapePathElement(%q) = %q, which escapes back to %q", s, d, e)
		}
		if !strings.ContainsAny(s, "/") && !dbus.ObjectPath("/"+s).IsValid() {
			t.Fatalf("accepted %q which is not a valid path element", s)
		}
	})
}
