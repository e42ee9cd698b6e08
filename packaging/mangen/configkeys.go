package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The default config.toml shows every setting commented out as "#key = value"
// (no space after '#'); "# text" is prose and may quote examples freely.
// An uncommented setting counts as well, so uncommenting one line of the
// shipped file does not make the check fail.
var (
	settingLine = regexp.MustCompile(`^#?\s*([A-Za-z][A-Za-z0-9_]*)\s*=`)
	tableLine   = regexp.MustCompile(`^#?\s*\[\[?\s*([A-Za-z0-9_.]+)\s*\]\]?\s*(#.*)?$`)
	counterName = regexp.MustCompile(`^#?\s*name\s*=\s*"([^"]*)"`)
)

// ConfigFile is what the default configuration file documents.
type ConfigFile struct {
	Keys     []string // qualified as ConfigKeys qualifies them, each once
	Counters []string // names of the [[counterDetection.counters]] entries
}

// ParseConfigFile reads the settings a TOML file shows, commented out or
// not. Prose lines ("# text") are skipped, so an explanation that happens
// to contain "x = y" after "# " is not a setting.
func ParseConfigFile(r io.Reader) (ConfigFile, error) {
	var cf ConfigFile
	seen := map[string]bool{}
	table := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		if strings.HasPrefix(line, "# ") || line == "#" || strings.TrimSpace(line) == "" {
			continue
		}
		if m := tableLine.FindStringSubmatch(line); m != nil {
			table = m[1]
			continue
		}
		m := settingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		k := qualify(table, m[1])
		if !seen[k] {
			seen[k] = true
			cf.Keys = append(cf.Keys, k)
		}
		if table == "counterDetection.counters" {
			if n := counterName.FindStringSubmatch(line); n != nil {
				cf.Counters = append(cf.Counters, n[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return cf, fmt.Errorf("read config: %w", err)
	}
	return cf, nil
}

// Drift compares the keys the manual documents with the keys the default
// configuration shows and describes every difference, one per line.
func Drift(manKeys, fileKeys []string, manPage, file string) []string {
	inMan := map[string]bool{}
	for _, k := range manKeys {
		inMan[k] = true
	}
	inFile := map[string]bool{}
	for _, k := range fileKeys {
		inFile[k] = true
	}
	var out []string
	for _, k := range manKeys {
		if !inFile[k] {
			out = append(out, fmt.Sprintf("%s documents %q but %s does not show it: add \"#%s = <default>\" to %s", manPage, k, file, last(k), file))
		}
	}
	for _, k := range fileKeys {
		if !inMan[k] {
			out = append(out, fmt.Sprintf("%s shows %q but %s does not document it: add \": `%s` = <default>\" under its table in the manual source", file, k, manPage, last(k)))
		}
	}
	return out
}

func last(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[i+1:]
	}
	return k
}
