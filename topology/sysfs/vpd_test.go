package sysfs

import (
	"strings"
	"testing"
)

// vpdBytes builds VPD as a ConnectX writes it: identifier string, VPD-R
// keywords (in order), a checksum keyword, the end tag.
func vpdBytes(name string, kw ...string) []byte {
	large := func(tag byte, data []byte) []byte {
		return append([]byte{tag, byte(len(data)), byte(len(data) >> 8)}, data...)
	}
	var r []byte
	for i := 0; i+1 < len(kw); i += 2 {
		r = append(r, kw[i][0], kw[i][1], byte(len(kw[i+1])))
		r = append(r, kw[i+1]...)
	}
	r = append(r, 'R', 'V', 1, 0x5a)
	out := large(0x82, []byte(name))
	out = append(out, large(0x90, r)...)
	return append(out, 0x78)
}

// A ConnectX-7 adapter's VPD (the layout lspci -vv prints) and an HGX
// B200 bridge function's, which carries SMDL=SW_MNG in its vendor string.
func TestVPD_ConnectXSerialAndLimitedPF(t *testing.T) {
	nic := vpdBytes("NVIDIA ConnectX-7 HHHL Adapter Card, 400Gb/s NDR IB",
		"PN", "MCX75310AAS-NEAT", "EC", "AA", "SN", "MT2245X01234  ", "V2", "MCX75310AAS-NEAT",
		"VA", "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX75310A")
	v, err := ParseVPD(nic)
	if err != nil {
		t.Fatal(err)
	}
	if v.Serial() != "MT2245X01234" || v.Keywords["PN"] != "MCX75310AAS-NEAT" || !strings.HasPrefix(v.Name, "NVIDIA ConnectX-7") {
		t.Fatalf("parsed %+v", v)
	}
	if v.LimitedPF() {
		t.Fatal("an adapter card's VPD read as a limited PF")
	}
	if _, ok := v.Keywords["RV"]; ok {
		t.Fatal("the checksum keyword was kept")
	}
	lpf := vpdBytes("NVIDIA ConnectX-7 NVLink bridge", "PN", "692-9K36F-00MV-JQ0", "SN", "1651124001234",
		"VA", "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX7B200:SMDL=SW_MNG")
	v, err = ParseVPD(lpf)
	if err != nil || !v.LimitedPF() || v.Serial() != "1651124001234" {
		t.Fatalf("limited PF VPD: %+v, %v", v, err)
	}
}

func TestVPD_MalformedKeepsWhatCameBefore(t *testing.T) {
	good := vpdBytes("card", "SN", "S1")
	for _, tc := range []struct {
		name   string
		in     []byte
		serial string
		bad    bool
	}{
		{"empty", nil, "", false},
		{"no end tag (the kernel stopped reading)", good[:len(good)-1], "S1", false},
		{"truncated large resource header", []byte{0x82, 4}, "", true},
		{"resource longer than the file", []byte{0x82, 0xff, 0xff, 'x'}, "", true},
		{"keyword longer than its resource", []byte{0x90, 5, 0, 'S', 'N', 9, 'a', 'b'}, "", true},
		{"damage after the serial", append(good[:len(good)-1], 0x91, 0x09, 0x00, 'V', '1', 0x30), "S1", true},
		{"lower-case keyword skipped", []byte{0x90, 8, 0, 's', 'n', 1, 'x', 'S', 'N', 1, 'y', 0x78}, "y", false},
		{"small resource skipped", append([]byte{0x22, 1, 2}, good...), "S1", false},
	} {
		v, err := ParseVPD(tc.in)
		if (err != nil) != tc.bad || v.Serial() != tc.serial {
			t.Errorf("%s: serial %q, err %v", tc.name, v.Serial(), err)
		}
	}
}

func TestVPD_NonPrintableBytesNeverReachAValue(t *testing.T) {
	v, err := ParseVPD(vpdBytes("a\x01b\xffc", "SN", "X\x00\x07Y\x80"))
	if err != nil || v.Name != "abc" || v.Serial() != "XY" {
		t.Fatalf("%+v %v", v, err)
	}
}

func FuzzParseVPD(f *testing.F) {
	f.Add(vpdBytes("NVIDIA ConnectX-7", "PN", "MCX75310AAS-NEAT", "SN", "MT2245X01234", "VA", "MLX:SMDL=SW_MNG"))
	f.Add([]byte{0x82, 0xff, 0xff})
	f.Add([]byte{0x90, 3, 0, 'S', 'N', 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _ := ParseVPD(b)
		if len(v.Keywords) > maxVPDKeywords {
			t.Fatalf("%d keywords kept", len(v.Keywords))
		}
		for k, val := range v.Keywords {
			if !validKeyword(k) {
				t.Fatalf("keyword %q kept", k)
			}
			for i := 0; i < len(val); i++ {
				if val[i] < 0x20 || val[i] >= 0x7f {
					t.Fatalf("value %q of %s holds a non-printable byte", val, k)
				}
			}
		}
	})
}
