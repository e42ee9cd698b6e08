package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const usage = `usage: mangen -src FILE -out DIR [-version V] [-date YYYY-MM-DD]
       mangen -src FILE -check-config CONFIG.toml
       mangen -src FILE -list keys|counters|flags:PAGE|commands:PAGE
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status (0 done,
// 1 drift or I/O failure, 2 usage).
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mangen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	src := fs.String("src", "packaging/man/nichealth.md", "manual source")
	out := fs.String("out", "", "directory to write the troff pages to")
	version := fs.String("version", "", "version printed in the page footer")
	date := fs.String("date", "", "date printed in the page footer (reproducible builds pass a fixed one)")
	checkConfig := fs.String("check-config", "", "default config.toml to compare with the documented keys")
	list := fs.String("list", "", "print documented keys, counters, flags:PAGE or commands:PAGE")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || (*out == "" && *checkConfig == "" && *list == "") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	f, err := os.Open(*src)
	if err != nil {
		fmt.Fprintf(stderr, "mangen: %v\n", err)
		return 1
	}
	pages, err := ParseSource(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "mangen: %s: %v\n", *src, err)
		return 1
	}
	if *list != "" {
		items, err := listing(pages, *list)
		if err != nil {
			fmt.Fprintf(stderr, "mangen: %v\n", err)
			return 2
		}
		for _, it := range items {
			fmt.Fprintln(stdout, it)
		}
	}
	if *checkConfig != "" {
		problems, err := checkConfigFile(pages, *checkConfig)
		if err != nil {
			fmt.Fprintf(stderr, "mangen: %v\n", err)
			return 1
		}
		for _, p := range problems {
			fmt.Fprintf(stderr, "mangen: %s\n", p)
		}
		if len(problems) > 0 {
			return 1
		}
	}
	if *out != "" {
		if err := writePages(pages, *out, *version, *date); err != nil {
			fmt.Fprintf(stderr, "mangen: %v\n", err)
			return 1
		}
	}
	return 0
}

func listing(pages []*Page, what string) ([]string, error) {
	kind, name, _ := strings.Cut(what, ":")
	switch kind {
	case "keys":
		return ConfigKeys(configPage(pages)), nil
	case "counters":
		return Terms(configPage(pages), "DEFAULT COUNTERS", termCounter), nil
	case "flags", "commands":
		p := FindPage(pages, name)
		if p == nil {
			return nil, fmt.Errorf("-list %s: no page %q in the source", what, name)
		}
		if kind == "flags" {
			return Flags(p), nil
		}
		return Commands(p), nil
	}
	return nil, fmt.Errorf("-list %q: want keys, counters, flags:PAGE or commands:PAGE", what)
}

// ConfigPageName is the page that documents the configuration file.
const ConfigPageName = "nichealthd.toml"

func configPage(pages []*Page) *Page {
	if p := FindPage(pages, ConfigPageName); p != nil {
		return p
	}
	return &Page{Name: ConfigPageName}
}

// checkConfigFile lists every difference between the manual and the
// default configuration: keys, and the names of the built-in counters.
func checkConfigFile(pages []*Page, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cf, err := ParseConfigFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := FindPage(pages, ConfigPageName)
	if p == nil {
		return []string{fmt.Sprintf("the manual source has no %s page", ConfigPageName)}, nil
	}
	manPage := p.FileName()
	problems := Drift(ConfigKeys(p), cf.Keys, manPage, path)
	manCounters := Terms(p, "DEFAULT COUNTERS", termCounter)
	problems = append(problems, namesDrift(manCounters, cf.Counters, manPage, path)...)
	return problems, nil
}

func namesDrift(man, file []string, manPage, path string) []string {
	inMan := map[string]bool{}
	for _, n := range man {
		inMan[n] = true
	}
	inFile := map[string]bool{}
	for _, n := range file {
		inFile[n] = true
	}
	var out []string
	for _, n := range man {
		if !inFile[n] {
			out = append(out, fmt.Sprintf("%s lists built-in counter %q but %s has no [[counterDetection.counters]] entry for it", manPage, n, path))
		}
	}
	for _, n := range file {
		if !inMan[n] {
			out = append(out, fmt.Sprintf("%s shows counter %q but %s does not list it under DEFAULT COUNTERS", path, n, manPage))
		}
	}
	return out
}

func writePages(pages []*Page, dir, version, date string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, p := range pages {
		path := filepath.Join(dir, p.FileName())
		if err := os.WriteFile(path, []byte(Render(p, version, date)), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
