package sim

import (
	"testing"

	"github.com/nichealth/nichealthd/topology/module"
)

func TestLinkStory_SimModuleReadsAsAHealthyOSFP(t *testing.T) {
	h, err := Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	const nd = "enp65s0f0np0"
	if _, err := (Modules{Root: h.Root}).Module(nd); err == nil {
		t.Fatal("empty cage read a module")
	}
	if err := h.InstallModule(nd); err != nil {
		t.Fatal(err)
	}
	mem, err := Modules{Root: h.Root}.Module(nd)
	if err != nil {
		t.Fatal(err)
	}
	m := module.Decode(mem)
	if m.Type != "OSFP" || m.Serial != "SIMENP65S0F0NP0" || len(module.Excursions(m, nil)) != 0 || len(m.Missing) != 0 {
		t.Fatalf("%+v %v", m, module.Excursions(m, nil))
	}
	if err := h.SetModule(nd, "temperature", 0, 77); err != nil {
		t.Fatal(err)
	}
	if err := h.SetModule(nd, "rx", 2, -11); err != nil {
		t.Fatal(err)
	}
	mem, _ = Modules{Root: h.Root}.Module(nd)
	var got []string
	for _, e := range module.Excursions(module.Decode(mem), nil) {
		got = append(got, e.String())
	}
	if len(got) != 2 {
		t.Fatalf("%q", got)
	}
	t.Log(got)
}

// The simulator's passive DAC and SFP28 read back as their bytes say: the
// DAC copper with no readings and nothing to judge on an up port, the
// SFP28 with its A2h diagnostics decoded and healthy; their readings
// cannot be set as the OSFP's can.
func TestIssue40_Row9_SimDACAndSFP28(t *testing.T) {
	h, err := Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	const nd = "enp65s0f0np0"
	for _, tc := range []struct {
		kind, typ, media string
		temp             bool
		lanes            int
	}{{"dac", "QSFP28", "copper", false, 4}, {"sfp28", "SFP/SFP+/SFP28", "optical", true, 1}} {
		if err := h.InstallModuleKind(nd, tc.kind); err != nil {
			t.Fatal(err)
		}
		mem, err := Modules{Root: h.Root}.Module(nd)
		if err != nil {
			t.Fatal(err)
		}
		m := module.Decode(mem)
		if m.Type != tc.typ || m.Media != tc.media || (m.TemperatureC != nil) != tc.temp || len(m.Lanes) != tc.lanes ||
			len(m.Missing) != 0 || len(m.Implausible) != 0 || len(module.Excursions(m, nil)) != 0 || m.Serial != "SIMENP65S0F0NP0" {
			t.Errorf("%s: %+v, excursions %v", tc.kind, m, module.Excursions(m, nil))
		}
		if err := h.SetModule(nd, "temperature", 0, 77); err == nil {
			t.Errorf("%s: temperature set on a module that is not the OSFP", tc.kind)
		}
	}
	if err := h.InstallModuleKind(nd, "xfp"); err == nil {
		t.Error("an unknown kind installed")
	}
}
