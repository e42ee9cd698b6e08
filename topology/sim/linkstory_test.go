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
