package main

import (
	"encoding/json"
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
