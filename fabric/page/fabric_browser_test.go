package page

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/overlay"
	"github.com/nichealth/nichealthd/internal/browser"
	"github.com/nichealth/nichealthd/internal/promlab"
)

// The published EDR fabric with two daemons' fabric shares scraped by a
// real Prometheus: node-a reads spine ec8200's ports 1 and 2 (port 1's
// symbol errors rise), node-b reads leaf f548e0's port 9 (its reads
// stopped an hour ago; its far end, spine port 3, is in no share) and leaf ec8240's port 1 towards node018's HCA
// (its symbol errors rise too). node-b's instance name is hostile.
func TestFabric_14_ErroringAndUnreadSwitchLinksInRealBrowser(t *testing.T) {
	const (
		spine    = "0xec0d9a0300ec8200"
		leaf     = "0xec0d9a0300f548e0"
		hcaLeaf  = "0xec0d9a0300ec8240"
		hca      = "0x506b4b03003fa9b6"
		nodeB    = `<img src=x onerror="window.__pwned='instance'">`
		erroring = "SymbolErrorCounter +"
	)
	b := browser.Start(t)
	raw, err := os.ReadFile(filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.topo"))
	if err != nil {
		t.Fatal(err)
	}
	g := ibnet.Parse(raw)
	a := promlab.FabricDaemon(t, true, []promlab.FabricPort{
		{SwitchGUID: spine, SwitchName: "spine", Port: 1, SymbolErrorsPerScrape: 40},
		{SwitchGUID: spine, SwitchName: "spine", Port: 2},
	})
	bAddr := promlab.FabricDaemon(t, true, []promlab.FabricPort{
		{SwitchGUID: leaf, SwitchName: "leaf", Port: 9, LastReadAge: time.Hour},
		{SwitchGUID: hcaLeaf, SwitchName: "leaf", Port: 1, SymbolErrorsPerScrape: 40},
	})
	prom := promlab.Start(t, nil,
		promlab.Target{Addr: a, Labels: map[string]string{"instance": "node-a"}},
		promlab.Target{Addr: bAddr, Labels: map[string]string{"instance": nodeB}})
	prom.Wait(t, `count(increase(nichealth_fabric_port_counter{counter="SymbolErrorCounter"}[1m]) > 0) == 2`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := overlay.FromPrometheus(ctx, &http.Client{}, prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	m := Build("EDR cluster", "ibnetdiscover switchib-edr-2023.topo", g, o)
	if want := "4 of 4 switch ports in the fabric shares are on this fabric; 1 read by no node"; !strings.Contains(strings.Join(m.Notes, "\n"), want) {
		t.Errorf("notes %q lack %q", m.Notes, want)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "fabric.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, m); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b.Navigate(t, "file://"+f.Name())

	// The link at a switch port, whichever end the dump printed first.
	link := func(guid string, port int) string {
		return fmt.Sprintf(`line.link[data-a=%q][data-ap="%d"], line.link[data-b=%q][data-bp="%d"]`, guid, port, guid, port)
	}
	for _, c := range []struct {
		sel, verdict, unread, stroke string
	}{
		{link(spine, 1), "degraded", "false", "rgb(255, 127, 14)"},
		{link(hcaLeaf, 1), "degraded", "false", "rgb(255, 127, 14)"},
		{link(spine, 2), "healthy", "false", "rgb(44, 160, 44)"},
		{link(leaf, 9), "unknown", "true", "rgb(110, 119, 129)"},
		// In nobody's share: not reported, not unread.
		{link(spine, 4), "unknown", "false", "rgb(154, 160, 166)"},
	} {
		if n := count(t, b, c.sel); n != 1 {
			t.Errorf("%s: %d links", c.sel, n)
			continue
		}
		if v, u := attr(t, b, c.sel, "data-verdict"), attr(t, b, c.sel, "data-unread"); v != c.verdict || u != c.unread {
			t.Errorf("%s: verdict %q unread %q, want %q %q", c.sel, v, u, c.verdict, c.unread)
		}
		var stroke string
		b.Eval(t, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).stroke`, c.sel), &stroke)
		if stroke != c.stroke {
			t.Errorf("%s: stroke %q, want %q", c.sel, stroke, c.stroke)
		}
	}
	if v := attr(t, b, link(leaf, 9), "class"); v != "link v-unknown unread" {
		t.Errorf("unread link class %q", v)
	}
	var dash string
	b.Eval(t, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).strokeDasharray`, link(leaf, 9)), &dash)
	if dash != "1px, 4px" {
		t.Errorf("unread link dash %q, want dotted", dash)
	}
	if v := attr(t, b, "#port-"+spine+"-1", "data-verdict"); v != "degraded" {
		t.Errorf("erroring spine port: %q", v)
	}
	// node018's own port is reported by no daemon; its link takes the
	// leaf side's word.
	if v := attr(t, b, "#port-"+hca+"-1", "data-verdict"); v != "unknown" {
		t.Errorf("node018's port: %q", v)
	}
	hover := func(id string) string {
		var tip string
		b.Eval(t, fmt.Sprintf(`(function(){var e=document.getElementById(%q); var r=e.getBoundingClientRect();
			e.dispatchEvent(new MouseEvent("mousemove",{bubbles:true,clientX:r.left+2,clientY:r.top+2}));
			return document.getElementById("tooltip").textContent})()`, id), &tip)
		return tip
	}
	if tip := hover("port-" + spine + "-1"); !strings.Contains(tip, "health: DEGRADED (read by node-a)") || !strings.Contains(tip, erroring) {
		t.Errorf("erroring spine port's tooltip:\n%s", tip)
	}
	if tip := hover("port-" + leaf + "-9"); !strings.Contains(tip, "READ BY NO NODE") || !strings.Contains(tip, "ago by "+nodeB) {
		t.Errorf("unread leaf port's tooltip:\n%s", tip)
	}
	if tip := hover("port-" + hcaLeaf + "-1"); !strings.Contains(tip, "read by "+nodeB) || !strings.Contains(tip, erroring) {
		t.Errorf("leaf port towards node018:\n%s", tip)
	}
	var bad []string
	b.Eval(t, scriptFree, &bad)
	if len(bad) != 0 {
		t.Errorf("a daemon's name became markup: %v", bad)
	}
}
