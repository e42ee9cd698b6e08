package page

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
)

//go:embed page.css
var css string

//go:embed page.js
var script string

// Render writes the page. The model goes in as JSON inside a script
// element: encoding/json escapes <, > and & in strings, so no node name
// can close the element or inject markup.
func Render(w io.Writer, m *Model) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode the fabric model: %w", err)
	}
	health := "no health overlay (run with --prometheus URL or --status DIR)"
	if m.Health != "" {
		health = "health from " + m.Health
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"generator\" content=\"nichealth-fabric\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n", html.EscapeString(m.Title), css)
	fmt.Fprintf(&b, "<header>\n<h1>%s</h1>\n<div class=\"meta\" id=\"summary\">%d switches, %d HCAs, %d routers, %d links &middot; %s &middot; %s</div>\n",
		html.EscapeString(m.Title), m.Switches, m.HCAs, m.Routers, len(m.Links), html.EscapeString(m.Source), html.EscapeString(health))
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "<div class=\"meta\">%s</div>\n", html.EscapeString(n))
	}
	b.WriteString(`<div class="tools">
<input type="search" id="search" placeholder="search node name or GUID" aria-label="search node name or GUID"> <span id="matches"></span>
<button id="collapse-leaves" type="button">collapse all leaf switches</button>
<button id="expand-all" type="button">expand all</button>
<label><input type="checkbox" id="group-chassis"> group switches by chassis</label>
<span class="legend"><span><i style="border-color:#d62728"></i>fatal</span><span><i style="border-color:#ff7f0e"></i>degraded</span><span><i style="border-color:#2ca02c"></i>healthy</span><span><i style="border-color:#9aa0a6"></i>not reported</span><span><i style="border-color:#9467bd;border-top-style:dashed"></i>trained below its peers</span></span>
<span class="meta">click a switch to collapse or expand it; hover a port for its details</span>
</div>
</header>
<div id="canvas"><svg id="fabric" xmlns="http://www.w3.org/2000/svg"></svg></div>
<div id="tooltip"></div>
<script type="application/json" id="fabric-data">`)
	b.Write(data)
	b.WriteString("</script>\n<script>\n")
	b.WriteString(script)
	b.WriteString("</script>\n</body>\n</html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}
