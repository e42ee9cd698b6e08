package page

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strconv"
)

//go:embed page.css
var css string

//go:embed page.js
var script string

// Render writes the page, streaming: the model goes out as JSON inside a
// script element, one node and link at a time, never as one string.
// Strings are encoded by encoding/json, which escapes <, > and &, so no
// name can close the element; the script builds its DOM from text and a
// closed vocabulary, so no name can become markup either.
//
// The data is arrays, not objects, to keep a large fabric's page small:
//
//	rates:   [width, speed, Gb/s]
//	nodes:   [kind, guid, name, lid, tier, chassis index or -1, leaf index or -1, verdict]
//	links:   [a, a port, b, b port, rate, expected rate or -1, flags (1 degraded, 2 ends disagree, 4 unread, 8 end a's half errs, 16 end b's), verdict]
//	ends:    [node, port, port guid or "", lid, label]
//	reports: [node, port, verdict, reporter, state, [conditions], flags (1 unread)]
//
// kinds are 1 switch, 2 HCA, 3 router; verdicts 0 not reported,
// 1 unknown, 2 healthy, 3 degraded, 4 fatal.
func Render(w io.Writer, m *Model) error {
	b := bufio.NewWriterSize(w, 64<<10)
	health := "no health overlay (run with --prometheus URL or --status DIR)"
	if m.Health != "" {
		health = "health from " + m.Health
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"generator\" content=\"nichealth-fabric\">\n")
	fmt.Fprintf(b, "<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n", html.EscapeString(m.Title), css)
	fmt.Fprintf(b, "<header>\n<h1>%s</h1>\n<div class=\"meta\" id=\"summary\">%d switches, %d HCAs, %d routers, %d links &middot; %s &middot; %s</div>\n",
		html.EscapeString(m.Title), m.Switches, m.HCAs, m.Routers, len(m.Links), html.EscapeString(m.Source), html.EscapeString(health))
	for _, n := range m.Notes {
		fmt.Fprintf(b, "<div class=\"meta\">%s</div>\n", html.EscapeString(n))
	}
	b.WriteString(`<div class="tools">
<input type="search" id="search" placeholder="search node name or GUID" aria-label="search node name or GUID"> <span id="matches"></span>
<button id="collapse-leaves" type="button">collapse all leaf switches</button>
<button id="expand-all" type="button">expand all</button>
<label><input type="checkbox" id="group-chassis"> group switches by chassis</label>
<span class="legend"><span><i style="border-color:#d62728"></i>fatal</span><span><i style="border-color:#ff7f0e"></i>degraded</span><span><i style="border-color:#2ca02c"></i>healthy</span><span><i style="border-color:#9aa0a6"></i>not reported</span><span><i style="border-color:#9467bd;border-top-style:dashed"></i>trained below its peers</span><span><i style="border-color:#6e7781;border-top-style:dotted"></i>read by no node</span></span>
<span class="meta">click a switch to collapse or expand it; hover a port for its details</span>
</div>
</header>
<div id="canvas"><svg id="fabric" xmlns="http://www.w3.org/2000/svg"></svg></div>
<div id="tooltip"></div>
<script type="application/json" id="fabric-data">`)
	e := &encoder{w: b}
	e.raw(`{"rates":[`)
	for i, r := range m.Rates {
		e.sep(i)
		e.raw("[")
		e.str(r.Width.String())
		e.raw(",")
		e.str(r.Speed.String())
		e.raw(",")
		e.raw(strconv.FormatFloat(ibnetRate(r), 'g', -1, 64))
		e.raw("]")
	}
	e.raw(`],"chassis":[`)
	for i, c := range m.Chassis {
		e.sep(i)
		e.str(c)
	}
	e.raw(`],"nodes":[`)
	for i, n := range m.Nodes {
		e.sep(i)
		e.raw("[")
		e.int(int(n.Kind))
		e.raw(",")
		e.str(n.GUID.String())
		e.raw(",")
		e.str(n.Name)
		e.ints(int(n.LID), int(n.Tier), int(n.Chassis), int(n.Leaf), int(n.Verdict))
		e.raw("]")
	}
	e.raw(`],"links":[`)
	for i, l := range m.Links {
		e.sep(i)
		flags := 0
		if l.Degraded {
			flags |= 1
		}
		if l.Disagree {
			flags |= 2
		}
		if l.Unread {
			flags |= 4
		}
		if l.ErrA {
			flags |= 8
		}
		if l.ErrB {
			flags |= 16
		}
		e.raw("[")
		e.int(int(l.A))
		e.ints(int(l.AP), int(l.B), int(l.BP), int(l.Rate), int(l.Expected), flags, int(l.Verdict))
		e.raw("]")
	}
	e.raw(`],"ends":[`)
	for i, end := range m.Ends {
		e.sep(i)
		e.raw("[")
		e.int(int(end.Node))
		e.ints(int(end.Port))
		e.raw(",")
		if end.GUID != 0 {
			e.str(end.GUID.String())
		} else {
			e.str("")
		}
		e.ints(int(end.LID))
		e.raw(",")
		e.str(end.Label)
		e.raw("]")
	}
	e.raw(`],"reports":[`)
	for i, r := range m.Reports {
		e.sep(i)
		e.raw("[")
		e.int(r.Node)
		e.ints(r.Port, int(r.Verdict))
		e.raw(",")
		e.str(r.Reporter)
		e.raw(",")
		e.str(r.State)
		e.raw(",[")
		for j, c := range r.Conditions {
			e.sep(j)
			e.str(c)
		}
		e.raw("]")
		if r.Unread {
			e.ints(1)
		} else {
			e.ints(0)
		}
		e.raw("]")
	}
	e.raw("]}")
	if e.err != nil {
		return fmt.Errorf("encode the fabric model: %w", e.err)
	}
	b.WriteString("</script>\n<script>\n")
	b.WriteString(script)
	b.WriteString("</script>\n</body>\n</html>\n")
	return b.Flush()
}

// encoder writes JSON by hand, keeping the first error.
type encoder struct {
	w   *bufio.Writer
	err error
}

func (e *encoder) raw(s string) { e.w.WriteString(s) }

func (e *encoder) sep(i int) {
	if i > 0 {
		e.w.WriteByte(',')
	}
}

func (e *encoder) int(v int) { e.w.WriteString(strconv.Itoa(v)) }

// ints writes ",v" for each value.
func (e *encoder) ints(vs ...int) {
	for _, v := range vs {
		e.w.WriteByte(',')
		e.w.WriteString(strconv.Itoa(v))
	}
}

// str writes s as a JSON string, <, > and & escaped (encoding/json's
// HTML-safe form).
func (e *encoder) str(s string) {
	b, err := json.Marshal(s)
	if err != nil && e.err == nil {
		e.err = err
	}
	e.w.Write(b)
}
