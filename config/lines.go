package config

import (
	"bufio"
	"bytes"
	"strings"
)

// keyLine is where a key is set in the document and its raw value text.
type keyLine struct {
	line int
	raw  string
}

// keyLines finds the line of every `key = value` of a TOML document, by
// full dotted key ("sinks.connector.timeout"). The decoder reports types
// and the validation reports keys, but neither knows where a key is; an
// operator with a 200-line ConfigMap wants the line. It is a line scanner,
// not a parser: multi-line values and inline tables are skipped, which
// only costs the line number in a message. In an array of tables the
// first occurrence wins.
func keyLines(doc []byte) map[string]keyLine {
	out := map[string]keyLine{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l[0] == '#':
			continue
		case strings.HasPrefix(l, "[["):
			if i := strings.Index(l, "]]"); i > 0 {
				table = cleanKey(l[2:i])
			}
			continue
		case l[0] == '[':
			if i := strings.IndexByte(l, ']'); i > 0 {
				table = cleanKey(l[1:i])
			}
			continue
		}
		eq := strings.IndexByte(l, '=')
		if eq <= 0 {
			continue
		}
		k := cleanKey(l[:eq])
		if table != "" {
			k = table + "." + k
		}
		if _, seen := out[k]; !seen {
			out[k] = keyLine{line: n, raw: strings.TrimSpace(l[eq+1:])}
		}
	}
	return out
}

// cleanKey normalises a dotted key: spaces around dots and quotes of
// quoted parts removed.
func cleanKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}
