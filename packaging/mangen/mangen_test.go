package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/component"
)

const (
	sourcePath     = "../man/nichealth.md"
	configPath     = "../config/config.toml"
	completionPath = "../completion/nichealthctl.bash"
	zshPath        = "../completion/_nichealthctl"
)

func loadPages(t *testing.T) []*Page {
	t.Helper()
	f, err := os.Open(sourcePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pages, err := ParseSource(f)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// The shipped configuration and nichealthd.toml(5) must document the same
// keys and the same built-in counters: this is the drift the single
// manual source exists to prevent.
func TestManPages_ConfigKeysMatchDefaultConfig(t *testing.T) {
	problems, err := checkConfigFile(loadPages(t), configPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestManPages_EveryPageRendersWithoutTroffWarnings(t *testing.T) {
	pages := loadPages(t)
	var names []string
	for _, p := range pages {
		names = append(names, p.FileName())
	}
	slices.Sort(names)
	want := []string{"nichealth-fabric-plan.1", "nichealth-fabric.1", "nichealthctl.1", "nichealthd.8", "nichealthd.toml.5"}
	if !slices.Equal(names, want) {
		t.Fatalf("pages = %v, want %v", names, want)
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		component.Missing(t, "groff not installed: rendering is checked by packaging/test/unit-quality.sh where it is")
	}
	for _, p := range pages {
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
		cmd.Stdin = strings.NewReader(Render(p, "0.0.0", "2025-01-01"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("%s: groff: %v\n%s", p.FileName(), err, stderr.String())
		}
	}
}

// The bash and zsh completions offer exactly the sub-commands and global
// flags nichealthctl(1) documents.
func TestManPages_CompletionMatchesNichealthctlPage(t *testing.T) {
	p := FindPage(loadPages(t), "nichealthctl")
	if p == nil {
		t.Fatal("no nichealthctl page")
	}
	wantCmds := Commands(p)
	wantFlags := Flags(p)
	slices.Sort(wantCmds)
	slices.Sort(wantFlags)
	b, err := os.ReadFile(completionPath)
	if err != nil {
		t.Fatal(err)
	}
	check := func(file, what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s offers %s %v, nichealthctl(1) documents %v", file, what, got, want)
		}
	}
	check(completionPath, "commands", words(t, completionPath, b, `(?m)^\s*local commands="([^"]*)"`), wantCmds)
	// Every documented option is offered somewhere, and nothing else.
	offered := all(b, `(--[a-z][a-z-]*)`)
	check(completionPath, "flags", offered, wantFlags)

	z, err := os.ReadFile(zshPath)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)cmds=\((.*?)\n\s*\)`).FindSubmatch(z)
	if block == nil {
		t.Fatalf("%s: no cmds=( ... ) array", zshPath)
	}
	check(zshPath, "commands", all(block[1], `'([a-z-]+):`), wantCmds)
	check(zshPath, "flags", all(z, `'(?:\([^)]*\))?(--[a-z-]+)\[`), wantFlags)
}

// all returns the distinct first submatches of re in b, sorted.
func all(b []byte, re string) []string {
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllSubmatch(b, -1) {
		if s := string(m[1]); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func words(t *testing.T, file string, b []byte, re string) []string {
	t.Helper()
	m := regexp.MustCompile(re).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no line matching %s", file, re)
	}
	w := strings.Fields(string(m[1]))
	slices.Sort(w)
	return w
}

func TestParseSource_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"no pages", "just prose\n", "no @page"},
		{"malformed marker", "@page nichealthd\n", "line 1: malformed page marker"},
		{"section not a digit", "@page x y \"t\"\n", "malformed"},
		{"duplicate page", "@page a 1 \"t\"\n@page a 1 \"u\"\n", "line 2: page a.1 already started at line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSource(strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConfigKeys_Tables(t *testing.T) {
	src := "@page x.toml 5 \"t\"\n" +
		"# TOP\n: `a` = `1`\n  body\n" +
		"## [s.t]\n: `b` = `2`\n" +
		"## [[c.d]]\n: `name` = *(required)*\n" +
		"```\n: `fenced` = `no`\n```\n" +
		"# OTHER\n: `e` = `3`\n: `notakey`\n"
	pages, err := ParseSource(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	got := ConfigKeys(pages[0])
	want := []string{"a", "s.t.b", "c.d.name", "e"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}
}

func TestParseConfigFile_SettingsNotProse(t *testing.T) {
	src := `# Prose with an example: x = 1
# socket = "unix:///run/nvsentinel/nvsentinel.sock"
#top = 1
uncommented = "yes"
#[sec]
#k = "v"   # trailing comment
[real]
z = 1
#[[counterDetection.counters]]
#name = "link_downed"
#[[counterDetection.counters]]
#name = "symbol_error"
#threshold = 1
`
	cf, err := ParseConfigFile(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"top", "uncommented", "sec.k", "real.z", "counterDetection.counters.name", "counterDetection.counters.threshold"}
	if !slices.Equal(cf.Keys, wantKeys) {
		t.Errorf("keys = %v, want %v", cf.Keys, wantKeys)
	}
	if want := []string{"link_downed", "symbol_error"}; !slices.Equal(cf.Counters, want) {
		t.Errorf("counters = %v, want %v", cf.Counters, want)
	}
}

func TestDrift_NamesBothDirections(t *testing.T) {
	got := Drift([]string{"a", "s.b"}, []string{"a", "c"}, "x.5", "f.toml")
	if len(got) != 2 || !strings.Contains(got[0], `"s.b"`) || !strings.Contains(got[0], `#b = <default>`) ||
		!strings.Contains(got[1], `"c"`) {
		t.Fatalf("drift = %q", got)
	}
}

func TestRender_Markup(t *testing.T) {
	src := "@page demo 8 \"Demo page\"\n" +
		"# NAME\ndemo - a `--flag` and *arg* and **bold**\n\n" +
		".starts with a dot\n\n" +
		": `--opt` *X*\n  Body of opt.\n\n  Second paragraph.\n" +
		"- item one\n" +
		"```\n.not a macro \\ back\n```\n" +
		"unterminated `code and *star\n"
	pages, err := ParseSource(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	out := Render(pages[0], "1.2.3", "2025-01-01")
	for _, want := range []string{
		`.TH "DEMO" 8 "2025\-01\-01" "nichealthd 1.2.3" "System Administration"`,
		".SH \"NAME\"\ndemo \\- a \\fB\\-\\-flag\\fR and \\fIarg\\fR and \\fBbold\\fR\n",
		"\\&.starts with a dot",
		".TP\n\\fB\\-\\-opt\\fR \\fIX\\fR\nBody of opt.\n.IP\nSecond paragraph.\n",
		".IP \\(bu 2\nitem one\n",
		".nf\n\\&.not a macro \\e back\n.fi\n",
		"unterminated `code and *star",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q\n--- got ---\n%s", want, out)
		}
	}
}

func TestRun_WritesPagesAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"-src", sourcePath, "-out", dir, "-version", "9.9"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("rc = %d, stderr %s", rc, stderr.String())
	}
	for _, n := range []string{"nichealthd.8", "nichealthctl.1", "nichealthd.toml.5"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
	if rc := run(nil, &stdout, &stderr); rc != 2 {
		t.Errorf("no arguments: rc = %d, want 2", rc)
	}
	if rc := run([]string{"-src", filepath.Join(dir, "missing.md"), "-out", dir}, &stdout, &stderr); rc != 1 {
		t.Errorf("missing source: rc = %d, want 1", rc)
	}
	stdout.Reset()
	if rc := run([]string{"-src", sourcePath, "-list", "flags:nichealthd"}, &stdout, &stderr); rc != 0 ||
		!strings.Contains(stdout.String(), "--state-file\n") {
		t.Errorf("-list flags:nichealthd: rc = %d, out %q", rc, stdout.String())
	}
	if rc := run([]string{"-src", sourcePath, "-list", "flags:nosuchpage"}, &stdout, &stderr); rc != 2 {
		t.Errorf("-list of an unknown page: rc = %d, want 2", rc)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("#pollingInterval = \"1s\"\n#bogusKey = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if rc := run([]string{"-src", sourcePath, "-check-config", bad}, &stdout, &stderr); rc != 1 ||
		!strings.Contains(stderr.String(), `"bogusKey"`) {
		t.Errorf("-check-config with drift: rc = %d, stderr %q", rc, stderr.String())
	}
}

// sourceOf writes pages back as source text.
func sourceOf(pages []*Page) string {
	var b strings.Builder
	for _, p := range pages {
		fmt.Fprintf(&b, "@page %s %d \"%s\"\n", p.Name, p.Section, p.Title)
		for _, l := range p.Lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// renderMacros are the only requests Render may emit: text from the
// source must never become a troff request.
var renderMacros = map[string]bool{`.\"`: true, ".TH": true, ".nh": true, ".ad": true, ".PP": true, ".RS": true,
	".RE": true, ".nf": true, ".fi": true, ".SH": true, ".SS": true, ".TP": true, ".IP": true}

// troffEscape is every escape Render writes; any other backslash is a
// source backslash that was not escaped.
var troffEscape = regexp.MustCompile(`\\(e|-|&|f[BIRP]|\(bu|\(dq|")`)

// FuzzRender: a page survives source → pages → source → pages unchanged,
// and its rendering contains no request or escape that text could inject;
// .RS/.RE and .nf/.fi stay balanced. Key extraction takes any text.
func FuzzRender(f *testing.F) {
	f.Add([]byte("@page a 1 \"t\"\n# H\n: `k` = `v`\n- x\n```\ny\n"))
	f.Add([]byte("@page a 5 \"t\"\n## [[x.y]]\n*a `b **c\n"))
	f.Add([]byte("@page a 8 \"t\"\n.so /etc/passwd\n'br\n: .TH x\n- 'x\n\\fBx\\\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pages, err := ParseSource(bytes.NewReader(b))
		if err != nil {
			return
		}
		again, err := ParseSource(strings.NewReader(sourceOf(pages)))
		if err != nil {
			t.Fatalf("re-parse of written source: %v", err)
		}
		if len(again) != len(pages) {
			t.Fatalf("%d pages, then %d", len(pages), len(again))
		}
		for i, p := range pages {
			q := again[i]
			if p.Name != q.Name || p.Section != q.Section || p.Title != q.Title || !slices.Equal(p.Lines, q.Lines) {
				t.Fatalf("page %d changed in a source round trip:\n%+v\n%+v", i, p, q)
			}
		}
		for _, p := range pages {
			out := Render(p, "v", "d")
			rs, nf := 0, 0
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
					req, _, _ := strings.Cut(line, " ")
					if !renderMacros[req] {
						t.Fatalf("rendered request %q from source text:\n%s", line, out)
					}
					switch req {
					case ".RS":
						rs++
					case ".RE":
						rs--
					case ".nf":
						nf++
					case ".fi":
						nf--
					}
					if rs < 0 || nf < 0 {
						t.Fatalf("unbalanced %s:\n%s", req, out)
					}
					if req == `.\"` {
						continue
					}
				}
				rest := troffEscape.ReplaceAllString(line, "")
				if strings.Contains(rest, `\`) {
					t.Fatalf("unescaped backslash in %q", line)
				}
			}
			if rs != 0 || nf != 0 {
				t.Fatalf("unbalanced .RS/.RE (%d) or .nf/.fi (%d):\n%s", rs, nf, out)
			}
			_ = ConfigKeys(p)
			_ = Commands(p)
			_ = Flags(p)
		}
	})
}

// renderConfigFile writes what ParseConfigFile found as a config file
// of commented-out settings, the way packaging/config/config.toml shows
// them: top-level keys first (TOML cannot return to the top level after a
// table), then each table with its keys, then one entry per counter.
func renderConfigFile(cf ConfigFile) string {
	var b strings.Builder
	tables := map[string][]string{}
	var order []string
	for _, k := range cf.Keys {
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			fmt.Fprintf(&b, "#%s = 1\n", k)
			continue
		}
		t := k[:i]
		if _, ok := tables[t]; !ok {
			order = append(order, t)
		}
		tables[t] = append(tables[t], k[i+1:])
	}
	for _, t := range order {
		fmt.Fprintf(&b, "#[%s]\n", t)
		for _, k := range tables[t] {
			fmt.Fprintf(&b, "#%s = 1\n", k)
		}
	}
	for _, c := range cf.Counters {
		fmt.Fprintf(&b, "#[[counterDetection.counters]]\n#name = \"%s\"\n", c)
	}
	return b.String()
}

var configKeyShape = regexp.MustCompile(`^([A-Za-z0-9_.]+\.)?[A-Za-z][A-Za-z0-9_]*$`)

// FuzzParseConfigFile: parse → validate (every key is a qualified TOML
// bare key, each once) → render → parse gives the same keys and counters.
func FuzzParseConfigFile(f *testing.F) {
	f.Add([]byte("#a = 1\n#[b]\n#c = 2\n"))
	f.Add([]byte("pollingInterval = \"1s\"\n# prose x = y\n#[[counterDetection.counters]]\n#name = \"link_downed\"\n#path = \"counters/link_downed\"\n"))
	f.Add([]byte("#[a.]\n#b=1\n[ x ] # c\n#y = 2\n#y = 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := ParseConfigFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, k := range cf.Keys {
			if !configKeyShape.MatchString(k) || seen[k] {
				t.Fatalf("key %q: not a qualified bare key, or listed twice (%v)", k, cf.Keys)
			}
			seen[k] = true
		}
		text := renderConfigFile(cf)
		again, err := ParseConfigFile(strings.NewReader(text))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if !slices.Equal(slices.Sorted(slices.Values(cf.Keys)), slices.Sorted(slices.Values(again.Keys))) ||
			!slices.Equal(cf.Counters, again.Counters) {
			t.Fatalf("round trip changed the file:\n%+v\n%+v\nrendered:\n%s", cf, again, text)
		}
	})
}
