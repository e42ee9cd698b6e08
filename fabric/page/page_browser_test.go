package page

import (
	"encoding/json"
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
		"verdict":"fatal","cableDirection":"from-host","cableSuspect":"cable","conditions":[{"fatal":true,"message":"Port mlx5_0 port 1: state DOWN, phys_state Disabled"}]}]}`
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
	// Its cable errs from-host: the switch's half of its link is drawn
	// erring, the HCA's is not (DESIGN.md section 15).
	if n := count(t, b, "line.cable-err"); n != 1 {
		t.Errorf("%d erring link halves drawn, want 1", n)
	}
	if v := attr(t, b, "line.cable-err", "data-node") + " " + attr(t, b, "line.cable-err", "data-port"); v != leaf+" 12" {
		t.Errorf("the erring half is at %s, want the leaf's port 12", v)
	}
	b.Eval(t, `getComputedStyle(document.querySelector('line.cable-err')).stroke`, &stroke)
	if stroke != "rgb(227, 119, 194)" {
		t.Errorf("erring half stroke %q", stroke)
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

// scriptFree lists what would let text become code in the drawn page:
// elements and attributes outside the page's own vocabulary (so no on*
// handler, no src or href), and whether a planted handler ran.
const scriptFree = `(function(){
	var allowed = {HTML:1,HEAD:1,BODY:1,META:1,TITLE:1,STYLE:1,SCRIPT:1,HEADER:1,H1:1,DIV:1,INPUT:1,SPAN:1,BUTTON:1,LABEL:1,I:1,
		svg:1,g:1,rect:1,text:1,line:1,circle:1,title:1};
	var attrs = {lang:1,charset:1,name:1,content:1,type:1,id:1,class:1,style:1,placeholder:1,"aria-label":1,xmlns:1,
		x:1,y:1,x1:1,y1:1,x2:1,y2:1,cx:1,cy:1,r:1,rx:1,width:1,height:1};
	var bad = [];
	document.querySelectorAll("*").forEach(function(e){
		if (!allowed[e.tagName]) bad.push("element " + e.tagName);
		for (var i = 0; i < e.attributes.length; i++) {
			var a = e.attributes[i].name;
			if (!attrs[a] && a.indexOf("data-") !== 0) bad.push("attribute " + a + " on " + e.tagName);
		}
	});
	if (document.querySelectorAll("script").length !== 2) bad.push(document.querySelectorAll("script").length + " script elements");
	if (window.__pwned !== undefined) bad.push("a planted handler ran: " + window.__pwned);
	return bad;
})()`

// Issue 32 row 1: a status dump whose port verdict was
// `"><img src=x onerror=…>` ran its script when the page was opened (the
// verdict went into innerHTML). Every input the page shows (node names
// from the dump and the node-name map, the title, the dump's node name,
// device, verdict, state and conditions) is hostile here; the page builds
// its DOM from text and a closed vocabulary, so no element, attribute or
// handler comes from them, before or after collapsing, searching and
// hovering, and the tooltip shows the words as they were said.
func TestBounded_1_HostileNamesAndVerdictsStayText(t *testing.T) {
	b := browser.Start(t)
	const (
		leafName = `<img src=x onerror="window.__pwned='leaf'">`
		hcaName  = `"><svg onload="window.__pwned='hca'"> mlx5_0`
		verdict  = `"><img src=x onerror=window.__pwned='verdict'>`
		cond     = `<img src=x onerror="window.__pwned='condition'">`
		device   = `mlx5_0<script>window.__pwned='device'</script>`
	)
	topo := "Switch\t36 \"S-00000000000000aa\"\t\t# \"" + leafName + "\" base port 0 lid 1 lmc 0\n" +
		"[1]\t\"H-00000000000000b1\"[1](b1) \t\t# \"" + hcaName + "\" lid 2 4xNDR\n" +
		"[2]\t\"H-00000000000000b2\"[1](b2) \t\t# \"plain mlx5_0\" lid 3 4xNDR\n" +
		"[3]\t\"S-00000000000000cc\"[1]\t\t# \"spine\" lid 4 4xNDR\n" +
		"\nCa\t1 \"H-00000000000000b1\"\t\t# \"" + hcaName + "\"\n" +
		"[1](b1) \t\"S-00000000000000aa\"[1]\t\t# lid 2 lmc 0 \"" + leafName + "\" lid 1 4xNDR\n" +
		"\nSwitch\t36 \"S-00000000000000cc\"\t\t# \"spine\" base port 0 lid 4 lmc 0\n" +
		"[1]\t\"S-00000000000000aa\"[3]\t\t# \"" + leafName + "\" lid 1 4xNDR\n"
	g := ibnet.Parse([]byte(topo))
	g.ApplyNames(map[ibnet.GUID]string{0xb2: `<iframe src="javascript:window.__pwned='map'"></iframe>`})
	dir := t.TempDir()
	dump := map[string]any{"nodeName": `<script>window.__pwned='node'</script>`, "ports": []map[string]any{{
		"device": device, "port": 1, "nodeGUID": "0xb1", "portGUID": "0xb1", "state": `<b onmouseover="window.__pwned='state'">DOWN</b>`,
		"physState": "Disabled", "verdict": verdict, "conditions": []map[string]any{{"fatal": true, "message": cond}},
	}}}
	raw, err := json.Marshal(dump)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "n.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	o, probs, err := overlay.FromStatusDir(dir)
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	f, err := os.Create(filepath.Join(dir, "fabric.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, Build(`<img src=x onerror="window.__pwned='title'">`, "<b>source</b>", g, o)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b.Navigate(t, "file://"+f.Name())

	check := func(when string) {
		t.Helper()
		var bad []string
		b.Eval(t, scriptFree, &bad)
		if len(bad) != 0 {
			t.Errorf("%s: %v", when, bad)
		}
	}
	check("opened")
	if n := count(t, b, ".node"); n != 4 {
		t.Errorf("%d nodes drawn, want 4", n)
	}
	// The reported port is drawn with the vocabulary's word, not the dump's.
	if v := attr(t, b, "#port-0x00000000000000b1-1", "data-verdict"); v != "unknown" {
		t.Errorf("hostile verdict drawn as %q, want unknown", v)
	}
	if v := attr(t, b, "#port-0x00000000000000b1-1", "class"); v != "port v-unknown" {
		t.Errorf("port class %q", v)
	}
	var label string
	b.Eval(t, `document.querySelector("#node-0x00000000000000b1 text").textContent`, &label)
	if label != hcaName[:23]+"\u2026" {
		t.Errorf("HCA label %q", label)
	}
	var tip string
	b.Eval(t, `(function(){var e=document.getElementById("port-0x00000000000000b1-1"); var r=e.getBoundingClientRect();
		e.dispatchEvent(new MouseEvent("mousemove",{bubbles:true,clientX:r.left+2,clientY:r.top+2}));
		return document.getElementById("tooltip").textContent})()`, &tip)
	for _, want := range []string{hcaName + "  port 1", "health: UNKNOWN", device, cond, leafName} {
		if !contains(tip, want) {
			t.Errorf("tooltip lacks %q:\n%s", want, tip)
		}
	}
	check("hovered")
	b.Click(t, "#node-0x00000000000000aa")
	check("collapsed")
	b.Click(t, "#node-0x00000000000000aa")
	b.Type(t, "#search", "<img")
	check("searched")
	var title string
	b.Eval(t, `document.title + "|" + document.querySelector("h1").textContent`, &title)
	if title != `<img src=x onerror="window.__pwned='title'">|<img src=x onerror="window.__pwned='title'">` {
		t.Errorf("title %q", title)
	}
}
