package page

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/overlay"
	"github.com/nichealth/nichealthd/internal/browser"
)

// edrPage renders the published EDR dump with one node's status dump
// saying its HCA port is fatal, and returns the page's file URL.
func edrPage(t *testing.T) (string, *ibnet.Graph) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.topo"))
	if err != nil {
		t.Fatal(err)
	}
	g := ibnet.Parse(raw)
	dir := t.TempDir()
	dumps := filepath.Join(dir, "status")
	if err := os.Mkdir(dumps, 0o755); err != nil {
		t.Fatal(err)
	}
	// node046's ConnectX-4 (node and port GUID 0x08c0eb0300ddc0f6) as its
	// nichealthctl status --json would list it.
	dump := `{"nodeName":"node046","healthy":false,"ports":[{"device":"mlx5_0","port":1,"linkLayer":"InfiniBand",
		"nodeGUID":"0x08c0eb0300ddc0f6","portGUID":"0x08c0eb0300ddc0f6","state":"DOWN","physState":"Disabled",
		"verdict":"fatal","conditions":[{"fatal":true,"message":"Port mlx5_0 port 1: state DOWN, phys_state Disabled"}]}]}`
	if err := os.WriteFile(filepath.Join(dumps, "node046.json"), []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	o, probs, err := overlay.FromStatusDir(dumps)
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	f, err := os.Create(filepath.Join(dir, "fabric.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, Build("EDR cluster", "ibnetdiscover switchib-edr-2023.topo", g, o)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return "file://" + f.Name(), g
}

func count(t *testing.T, b *browser.Browser, selector string) int {
	t.Helper()
	var n int
	b.Eval(t, fmt.Sprintf(`document.querySelectorAll(%q).length`, selector), &n)
	return n
}

func attr(t *testing.T, b *browser.Browser, selector, name string) string {
	t.Helper()
	var v string
	b.Eval(t, fmt.Sprintf(`(function(){var e=document.querySelector(%q); return e ? (e.getAttribute(%q)||"") : "<none>"})()`, selector, name), &v)
	return v
}

// A real headless Chromium opens the page from disk, offline: every switch
// and HCA of the published dump is in the DOM, clicking a leaf switch
// hides its HCAs and their ports, the port a status dump calls fatal is
// drawn fatal with its link, the DDR link is drawn as trained below its
// peers, and the search finds a node by name.
func TestFabric_12_PageInRealBrowser(t *testing.T) {
	b := browser.Start(t)
	url, g := edrPage(t)
	b.Navigate(t, url)

	for _, nd := range g.Nodes {
		if n := count(t, b, "#node-"+nd.GUID.String()); n != 1 {
			t.Errorf("%s %s (%s): %d elements, want 1", nd.Kind, nd.GUID, nd.Name, n)
		}
	}
	if n := count(t, b, ".node.switch"); n != 6 {
		t.Errorf("%d switches drawn, want 6", n)
	}
	if n := count(t, b, ".node.hca"); n != 96 {
		t.Errorf("%d HCAs drawn, want 96", n)
	}
	if n := count(t, b, "line.link"); n != 144 {
		t.Errorf("%d links drawn, want 144", n)
	}

	// node046 hangs under leaf ec0d9a0300ec8240 (port 12).
	const hca, leaf = "0x08c0eb0300ddc0f6", "0xec0d9a0300ec8240"
	if v := attr(t, b, "#port-"+hca+"-1", "data-verdict"); v != "fatal" {
		t.Errorf("node046's port: data-verdict %q, want fatal", v)
	}
	if v := attr(t, b, "#port-"+hca+"-1", "class"); v != "port v-fatal" {
		t.Errorf("node046's port class %q", v)
	}
	if v := attr(t, b, fmt.Sprintf(`line.link[data-a=%q]`, hca), "data-verdict"); v != "fatal" {
		t.Errorf("node046's link: data-verdict %q, want fatal", v)
	}
	var stroke string
	b.Eval(t, fmt.Sprintf(`getComputedStyle(document.querySelector('line.link[data-a=%q]')).stroke`, hca), &stroke)
	if stroke != "rgb(214, 39, 40)" {
		t.Errorf("fatal link stroke %q, want red", stroke)
	}
	if v := attr(t, b, `#node-`+hca, "class"); v != "node hca v-fatal" {
		t.Errorf("node046 class %q", v)
	}
	// The one 4xDDR inter-switch link among 4xEDR ones.
	if n := count(t, b, `line.link[data-degraded="true"]`); n != 1 {
		t.Errorf("%d links drawn as trained below their peers, want 1", n)
	}
	if v := attr(t, b, `line.link[data-degraded="true"]`, "data-a") + attr(t, b, `line.link[data-degraded="true"]`, "data-b"); v != "0xec0d9a0300ec82000xec0d9a0300ec8480" {
		t.Errorf("degraded link %s", v)
	}

	// Collapse the leaf: its 24 HCAs and every port of theirs go, and so do
	// the leaf's own ports towards them; the other leaves' stay.
	leafPorts := count(t, b, fmt.Sprintf(`circle.port[data-node=%q]`, leaf))
	b.Click(t, "#node-"+leaf)
	if n := count(t, b, "#port-"+hca+"-1"); n != 0 {
		t.Errorf("after collapsing the leaf, node046's port is still drawn")
	}
	if n := count(t, b, "#node-"+hca); n != 0 {
		t.Errorf("after collapsing the leaf, node046 is still drawn")
	}
	if n := count(t, b, ".node.hca"); n != 72 {
		t.Errorf("%d HCAs drawn after collapsing one leaf, want 72", n)
	}
	if n := count(t, b, fmt.Sprintf(`circle.port[data-node=%q]`, leaf)); n != leafPorts-24 {
		t.Errorf("the collapsed leaf shows %d ports, want %d (its 12 uplinks)", n, leafPorts-24)
	}
	if v := attr(t, b, "#node-"+leaf, "class"); v != "node switch v-fatal collapsed" {
		t.Errorf("collapsed leaf class %q (the fatal HCA below it shows on it)", v)
	}
	var badge string
	b.Eval(t, `document.querySelector(".badge text").textContent`, &badge)
	if badge != "24 hidden, 1 fatal" {
		t.Errorf("badge %q", badge)
	}
	// Clicking again brings them back.
	b.Click(t, "#node-"+leaf)
	if n := count(t, b, "#port-"+hca+"-1"); n != 1 {
		t.Errorf("after expanding the leaf, node046's port is not drawn")
	}

	// Search by name: one match, highlighted, the rest dimmed.
	b.Type(t, "#search", "node046")
	var matches string
	b.Eval(t, `document.getElementById("matches").textContent`, &matches)
	if matches != "1 match" || attr(t, b, "#node-"+hca, "class") != "node hca v-fatal match" || count(t, b, ".node.dim") != 101 {
		t.Errorf("search: %q, class %q, %d dimmed", matches, attr(t, b, "#node-"+hca, "class"), count(t, b, ".node.dim"))
	}

	// Hovering the port explains it.
	var tip string
	b.Eval(t, fmt.Sprintf(`(function(){var e=document.getElementById("port-%s-1"); var r=e.getBoundingClientRect();
		e.dispatchEvent(new MouseEvent("mousemove",{bubbles:true,clientX:r.left+2,clientY:r.top+2}));
		return document.getElementById("tooltip").textContent})()`, hca), &tip)
	for _, want := range []string{"node046 HCA-1  port 1", "port GUID 0x08c0eb0300ddc0f6", "health: FATAL (node046 mlx5_0 port 1)", "state DOWN, phys_state Disabled", "link 4xEDR (100 Gb/s)"} {
		if !contains(tip, want) {
			t.Errorf("tooltip lacks %q:\n%s", want, tip)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
