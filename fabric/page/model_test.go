package page

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

func TestFabric_12_TiersAndChassis(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.topo"))
	if err != nil {
		t.Fatal(err)
	}
	g := ibnet.Parse(raw)
	tiers := Tiers(g)
	// The four switches with HCAs are leaves, the two without are spines.
	for guid, want := range map[ibnet.GUID]int{
		0xec0d9a0300ec8240: 1, 0xec0d9a0300ec8480: 1, 0xec0d9a0300f548e0: 1, 0xec0d9a0300f548c0: 1,
		0xec0d9a0300ec8200: 2, 0xec0d9a0300ec81e0: 2, 0x08c0eb0300ddc0f6: 0,
	} {
		if got := tiers[g.Index(guid)]; got != want {
			t.Errorf("%s: tier %d, want %d", guid, got, want)
		}
	}
	// Every switch has its own system image: no chassis.
	if c := Chassis(g); len(c) != 0 {
		t.Errorf("chassis %v", c)
	}
	m := Build("t", "s", g, nil)
	if m.Switches != 6 || m.HCAs != 96 || len(m.Links) != 144 || m.Health != "" {
		t.Errorf("model counts %d %d %d %q", m.Switches, m.HCAs, len(m.Links), m.Health)
	}
	for _, n := range m.Nodes {
		if n.Kind == ibnet.HCA && (n.Leaf < 0 || m.Nodes[n.Leaf].Kind != ibnet.Switch) {
			t.Errorf("HCA %s has no leaf", n.Name)
		}
	}

	// Two ASICs of one director share a system image GUID: one chassis,
	// named by the grouped dump's chassis number.
	g = ibnet.Parse([]byte(strings.Join([]string{
		"vendid=0x2c9", "devid=0xd2f0", "sysimgguid=0xaa\t\t# Chassis 3 (core)", "switchguid=0x1(1)",
		"Switch\t36 \"S-0000000000000001\"\t\t# \"line 1\" base port 0 lid 1 lmc 0",
		"[1]\t\"S-0000000000000002\"[1]\t\t# \"spine 1\" lid 2 4xNDR",
		"[2]\t\"H-0000000000000010\"[1](10) \t\t# \"h\" lid 3 4xNDR",
		"vendid=0x2c9", "devid=0xd2f0", "sysimgguid=0xaa\t\t# Chassis 3 (core)", "switchguid=0x2(2)",
		"Switch\t36 \"S-0000000000000002\"\t\t# \"spine 1\" base port 0 lid 2 lmc 0",
		"[1]\t\"S-0000000000000001\"[1]\t\t# \"line 1\" lid 1 4xNDR",
	}, "\n")))
	c := Chassis(g)
	if c[g.Index(1)] != "chassis 3 (0x00000000000000aa)" || c[g.Index(2)] != c[g.Index(1)] {
		t.Errorf("chassis %v", c)
	}
	if tt := Tiers(g); tt[g.Index(1)] != 1 || tt[g.Index(2)] != 2 {
		t.Errorf("tiers %v", tt)
	}
}

// A node name cannot break out of the page's data element.
func TestFabric_12_RenderEscapesNames(t *testing.T) {
	g := ibnet.Parse([]byte("Switch\t2 \"S-1\"\t# \"</script><script>alert(1)</script>\" base port 0 lid 1 lmc 0\n[1]\t\"H-2\"[1](2) \t# \"<b>h</b>\" lid 3 4xNDR\n"))
	var b strings.Builder
	if err := Render(&b, Build("<t>", "s", g, nil)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "</script>") != 2 || strings.Contains(out, "<b>h</b>") || strings.Contains(out, "<title><t>") {
		t.Errorf("unescaped markup in:\n%s", out[:min(len(out), 2000)])
	}
}

// Issue 32 row 1, statically: the script has no way to turn text into
// markup (the browser test shows it does not; this says where not to
// start).
func TestBounded_1_ScriptParsesNoMarkup(t *testing.T) {
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "createContextualFragment", "DOMParser", "eval(", "Function("} {
		if strings.Contains(script, sink) {
			t.Errorf("page.js uses %s", sink)
		}
	}
}

// Quantum-2 port labels reach the page with their ports.
func TestFabric_34_2_PortLabelsOnThePage(t *testing.T) {
	g := ibnet.Parse([]byte("Switch\t129 \"S-00000000000000aa\"\t\t# \"leaf\" enhanced port 0 lid 1 lmc 0\n" +
		"[1](1/1/1)\t\"H-00000000000000b1\"[1](b1) \t\t# \"h1 mlx5_0\" lid 2 2xNDR\n"))
	m := Build("t", "s", g, nil)
	found := false
	for _, e := range m.Ends {
		if e.Label == "1/1/1" && m.Nodes[e.Node].GUID == 0xaa && e.Port == 1 {
			found = true
		}
	}
	var b strings.Builder
	if err := Render(&b, m); err != nil {
		t.Fatal(err)
	}
	if !found || !strings.Contains(b.String(), `"1/1/1"`) {
		t.Errorf("label not on the page: %+v", m.Ends)
	}
}

// TestFabric_15_CableHalves: the half of an HCA's link next to the
// receiver that counts errors is the one drawn erring.
func TestFabric_15_CableHalves(t *testing.T) {
	for _, c := range []struct {
		a, b       string
		errA, errB bool
	}{
		{"", "", false, false},
		{"to-host", "", true, false},
		{"from-host", "", false, true},
		{"both", "", true, true},
		{"", "to-host", false, true},
		{"", "from-host", true, false},
	} {
		if a, b := errHalves(c.a, c.b); a != c.errA || b != c.errB {
			t.Errorf("ends %q %q: halves %v %v, want %v %v", c.a, c.b, a, b, c.errA, c.errB)
		}
	}
}
