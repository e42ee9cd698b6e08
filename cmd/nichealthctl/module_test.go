package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/module"
)

const moduleTestdata = "../../topology/module/testdata/"

// nichealthctl module decode reads both forms of a saved dump, says every
// reading past the module's thresholds and exits 1 for them; a dump of a
// healthy module exits 0.
func TestCtl_ModuleDecode(t *testing.T) {
	hexDump := moduleTestdata + "sff8636-mellanox-qsfp28.hex"
	b, err := os.ReadFile(hexDump)
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.ParseDump(b)
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(t.TempDir(), "eth2.bin")
	if err := os.WriteFile(raw, m.Flat(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"hex form, port up: dark lanes are faults", []string{"module", "decode", hexDump}, exitFailed,
			[]string{"Serial:       MT1834FT03846", "lane 3 Rx power no light (0 mW) below the module's low alarm threshold -13.31 dBm", "lane 1 latched Rx loss of signal"}},
		{"raw form, port down: nothing to say", []string{"module", "decode", "--port-down", raw}, exitOK,
			[]string{"QSFP28 (SFF-8636)", "Every reading is within the module's own thresholds."}},
		{"CMIS, healthy", []string{"module", "decode", moduleTestdata + "cmis-eoptolink-qsfpdd.txt"}, exitOK,
			[]string{"QSFP-DD (CMIS)", "State:        ModuleReady", "8     110.30 mA"}},
		{"not a dump", []string{"module", "decode", "module_test.go"}, exitFailed, []string{"module_test.go: "}},
		{"no file", []string{"module", "decode"}, exitUsage, []string{"takes one FILE"}},
		{"unknown subcommand", []string{"module", "encode"}, exitUsage, []string{`unknown subcommand "encode"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(tc.args, strings.NewReader(""), &out, &errOut)
			text := out.String() + errOut.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, text)
			}
			for _, c := range tc.contains {
				if !strings.Contains(text, c) {
					t.Errorf("output lacks %q:\n%s", c, text)
				}
			}
		})
	}
	var out, errOut strings.Builder
	if code := run([]string{"module", "decode", "--json", "-"}, strings.NewReader(string(b)), &out, &errOut); code != exitFailed {
		t.Fatalf("--json from stdin: exit %d: %s", code, errOut.String())
	}
	var got moduleDecoded
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out.String())
	}
	if got.Module.Serial != "MT1834FT03846" || len(got.Excursions) != 12 || got.Module.Thresholds.TxBiasMA == nil {
		t.Errorf("--json: %+v", got)
	}
}

// hexdumpC writes b as `hexdump -C` (and sfputil) lines from base.
func hexdumpC(sb *strings.Builder, b []byte, base int) {
	for i := 0; i < len(b); i += 16 {
		fmt.Fprintf(sb, "        %08x ", base+i)
		for _, c := range b[i : i+16] {
			fmt.Fprintf(sb, "%02x ", c)
		}
		sb.WriteString("|................|\n")
	}
}

// Issue 40 row 9: a passive DAC's dump shows no temperature (its bytes
// 22-23 are not one) and nothing to judge; an SFP's dump as `sfputil show
// eeprom-hexdump` prints it (A0h then A2h, each from offset 0) decodes its
// diagnostics; the same with an A2h header this reader does not know is
// refused with exit 1, not read as a module with identifier 0x4e.
func TestIssue40_Row9_CtlDecodesDACAndSFPHexdump(t *testing.T) {
	dac := make([]byte, 256)
	dac[0], dac[22], dac[23] = 0x11, 0x01, 0x80
	dac[147] = 0xa0
	copy(dac[196:], "MT2301VS01234   ")
	dacFile := filepath.Join(t.TempDir(), "dac.bin")
	if err := os.WriteFile(dacFile, dac, 0o644); err != nil {
		t.Fatal(err)
	}
	a0 := make([]byte, 256)
	a0[0], a0[92] = 0x03, 0x68
	copy(a0[68:], "SFP-SN-0001     ")
	a2 := make([]byte, 256)
	a2[0], a2[4] = 80, 75 // temperature high alarm 80 °C, warning 75 °C
	a2[2], a2[6] = 0xf6, 0xfb
	a2[96] = 33 // 33 °C
	var sb strings.Builder
	sb.WriteString("EEPROM hexdump for port Ethernet0\n        A0h dump\n")
	hexdumpC(&sb, a0, 0)
	sb.WriteString("        A2h dump\n")
	hexdumpC(&sb, a2, 0)
	sfp := filepath.Join(t.TempDir(), "sfp.txt")
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(sfp, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(sb.String(), "A2h dump", "Diagnostics", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same SFP whose A2h says its high temperature alarm is -100 °C
	// (-120, -110, -105, -100: ordered, absurd).
	a2[0], a2[2], a2[4], a2[6] = 0x9c, 0x88, 0x97, 0x92
	var ib strings.Builder
	ib.WriteString("A0h\n")
	hexdumpC(&ib, a0, 0)
	ib.WriteString("A2h\n")
	hexdumpC(&ib, a2, 0)
	implausible := filepath.Join(t.TempDir(), "implausible.txt")
	if err := os.WriteFile(implausible, []byte(ib.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file     string
		code     int
		contains []string
	}{
		{dacFile, exitOK, []string{"QSFP28 (SFF-8636)", "Media:        copper", "Temperature:  -  (no thresholds)", "Every reading is within"}},
		{sfp, exitOK, []string{"SFP/SFP+/SFP28 (SFF-8472)", "Serial:       SFP-SN-0001", "Temperature:  33.0 °C  (warning -5.0 °C to 75.0 °C, alarm -10.0 °C to 80.0 °C)"}},
		{bad, exitFailed, []string{"given twice"}},
		{implausible, exitFailed, []string{"Temperature:  33.0 °C  (no thresholds)", "- thresholds implausible, ignored: temperature high alarm -100.0 °C"}},
	} {
		var out, errOut strings.Builder
		code := run([]string{"module", "decode", tc.file}, strings.NewReader(""), &out, &errOut)
		text := out.String() + errOut.String()
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d:\n%s", tc.file, code, tc.code, text)
		}
		for _, c := range tc.contains {
			if !strings.Contains(text, c) {
				t.Errorf("%s: output lacks %q:\n%s", tc.file, c, text)
			}
		}
	}
}
