package main

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"regexp"
	"strconv"
	"strings"
)

// Page is one manual page of the source: everything between its "@page"
// line and the next one.
type Page struct {
	Name    string // e.g. "nichealthd.toml"
	Section int    // 1, 5 or 8
	Title   string // one-line description shown in the page footer/header
	Line    int    // line of the @page marker, for messages
	Lines   []string
}

// FileName is the troff file name, e.g. "nichealthd.toml.5".
func (p *Page) FileName() string { return p.Name + "." + strconv.Itoa(p.Section) }

var pageLine = regexp.MustCompile(`^@page\s+(\S+)\s+([1-9])\s+"([^"]*)"\s*$`)

// ParseSource splits the source into pages. Text before the first @page
// is a comment for the maintainers and is dropped. A malformed @page line,
// a duplicated page or a source without pages is an error naming the line.
func ParseSource(r io.Reader) ([]*Page, error) {
	var pages []*Page
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		// The scanner drops one carriage return before a newline; any
		// more (a file that went through two CRLF conversions) would
		// survive as text that troff prints as garbage, and would not
		// survive writing the source back. Every trailing one goes.
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, "@page") {
			m := pageLine.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: malformed page marker %q: want @page NAME SECTION \"TITLE\"", n, line)
			}
			sec, _ := strconv.Atoi(m[2])
			p := &Page{Name: m[1], Section: sec, Title: m[3], Line: n}
			if prev, dup := seen[p.FileName()]; dup {
				return nil, fmt.Errorf("line %d: page %s already started at line %d", n, p.FileName(), prev)
			}
			seen[p.FileName()] = n
			pages = append(pages, p)
			continue
		}
		if len(pages) > 0 {
			cur := pages[len(pages)-1]
			cur.Lines = append(cur.Lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read source: %w", err)
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("no @page marker: the source defines no manual page")
	}
	return pages, nil
}

// FindPage returns the page with the given name (any section), or nil.
func FindPage(pages []*Page, name string) *Page {
	for _, p := range pages {
		if p.Name == name {
			return p
		}
	}
	return nil
}

var (
	termKey     = regexp.MustCompile("^: `([A-Za-z][A-Za-z0-9_]*)` = ")
	termFlag    = regexp.MustCompile("^: `(--[a-z][a-z0-9-]*)`")
	termCommand = regexp.MustCompile("^: `([a-z][a-z-]*)[` ]")
	// A built-in counter under DEFAULT COUNTERS: ": `link_downed`".
	termCounter = regexp.MustCompile("^: `([a-z][a-z0-9_]*)`")
	tableHead   = regexp.MustCompile(`^## \[\[?([A-Za-z0-9_.]+)\]\]?\s*$`)
)

// prose yields the page's lines outside ``` code fences: an example
// config or command in a fence is not a definition to collect.
func (p *Page) prose() iter.Seq[string] {
	return func(yield func(string) bool) {
		fenced := false
		for _, line := range p.Lines {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
				continue
			}
			if !fenced && !yield(line) {
				return
			}
		}
	}
}

// ConfigKeys lists the configuration keys a page documents, qualified by
// their table ("pollingInterval", "sinks.jsonl.path",
// "counterDetection.counters.name"). A key is a definition term
// ": `key` = default"; a "## [table]" heading opens a table and any "#"
// heading returns to the top level.
func ConfigKeys(p *Page) []string {
	var keys []string
	table := ""
	for line := range p.prose() {
		switch {
		case strings.HasPrefix(line, "# "):
			table = ""
		case strings.HasPrefix(line, "## "):
			if m := tableHead.FindStringSubmatch(line); m != nil {
				table = m[1]
			}
		default:
			if m := termKey.FindStringSubmatch(line); m != nil {
				keys = append(keys, qualify(table, m[1]))
			}
		}
	}
	return keys
}

// Terms lists the definition terms of one "#" section of a page that
// match re (first submatch), e.g. the flags under OPTIONS or the
// sub-commands under COMMANDS.
func Terms(p *Page, section string, re *regexp.Regexp) []string {
	var out []string
	in := false
	for line := range p.prose() {
		if strings.HasPrefix(line, "# ") {
			in = strings.TrimSpace(line[2:]) == section
			continue
		}
		if in {
			if m := re.FindStringSubmatch(line); m != nil {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// Flags lists the options documented under OPTIONS.
func Flags(p *Page) []string { return Terms(p, "OPTIONS", termFlag) }

// Commands lists the sub-commands documented under COMMANDS, each once
// ("topology parse" and "topology collect" are both "topology").
func Commands(p *Page) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range Terms(p, "COMMANDS", termCommand) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func qualify(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}
