package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedFlags lists the options a page of the manual source documents
// under OPTIONS (": `--name` …" lines).
func documentedFlags(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", "man", "nichealth.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "@page "+page+" ")
	if !ok {
		t.Fatalf("no page %s in the manual source", page)
	}
	body, _, _ := strings.Cut(rest, "\n@page ")
	_, opts, ok := strings.Cut(body, "\n# OPTIONS\n")
	if !ok {
		t.Fatalf("page %s has no OPTIONS", page)
	}
	opts, _, _ = strings.Cut(opts, "\n# ")
	var out []string
	for _, m := range regexp.MustCompile("(?m)^: `(--?[a-z-]+)`").FindAllStringSubmatch(opts, -1) {
		out = append(out, strings.TrimLeft(m[1], "-"))
	}
	slices.Sort(out)
	return out
}

func flagNames(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	slices.Sort(out)
	return out
}

// nichealth-fabric(1) documents exactly map's options, and
// nichealth-fabric-plan(1) exactly plan's.
func TestDesign_14_ManPagesDocumentEveryOption(t *testing.T) {
	mfs, _ := mapFlags(io.Discard)
	pfs, _ := planFlags(io.Discard)
	for page, fs := range map[string]*flag.FlagSet{"nichealth-fabric": mfs, "nichealth-fabric-plan": pfs} {
		if doc, have := documentedFlags(t, page), flagNames(fs); !slices.Equal(doc, have) {
			t.Errorf("%s(1) documents %v; the command has %v", page, doc, have)
		}
	}
}
