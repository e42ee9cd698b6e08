package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"
)

// KernelLogFile is the [kernelLog] table: the kernel's own words about the
// NICs, read from <devRoot>/kmsg and judged by a table of patterns.
type KernelLogFile struct {
	Enabled *bool `toml:"enabled"`
	// MatchUserSpace also judges records written to /dev/kmsg from user
	// space (they never carry the kernel's facility).
	MatchUserSpace *bool                   `toml:"matchUserSpace"`
	Patterns       []patterntable.Override `toml:"patterns"`
}

// KernelLogConfig is [kernelLog] with defaults applied and its patterns
// merged and validated.
type KernelLogConfig struct {
	Enabled        bool
	MatchUserSpace bool
	Patterns       []patterntable.Pattern
}

// kernelLogFrom reads [kernelLog]. A pattern entry that cannot work is
// refused with its key (kernelLog.patterns[N].regex) and line.
func kernelLogFrom(c *Config, f *File, bad badFunc) error {
	k := f.KernelLog
	c.KernelLog = KernelLogConfig{Enabled: boolOr(k.Enabled, true), MatchUserSpace: boolOr(k.MatchUserSpace, false)}
	ps, err := patterntable.Merge(patterntable.Defaults(), k.Patterns)
	if err != nil {
		var ve *patterntable.ValidationError
		if errors.As(err, &ve) && ve.Index >= 0 {
			key := fmt.Sprintf("kernelLog.patterns[%d]", ve.Index)
			if ve.Key != "" {
				key += "." + ve.Key
			}
			reason := ve.Reason
			if ve.Name != "" {
				reason = fmt.Sprintf("pattern %q: %s", ve.Name, reason)
			}
			return bad(key, "%s", reason)
		}
		return bad("kernelLog.patterns", "%v", err)
	}
	for i, o := range k.Patterns {
		for _, def := range c.Counters {
			if o.Name != nil && *o.Name == def.Name {
				return bad(fmt.Sprintf("kernelLog.patterns[%d].name", i),
					"%q is also a counter's name, so nichealthctl ack DEVICE PORT %s would be ambiguous: rename the pattern", def.Name, def.Name)
			}
		}
	}
	c.KernelLog.Patterns = ps
	return nil
}

// indexedKeyLine finds the line of "table[i].key": the key's first line
// after the (i+1)-th [[table]] header. keyLines keys an array of tables
// by its first entry only.
func indexedKeyLine(doc []byte, key string) int {
	open := strings.IndexByte(key, '[')
	closeAt := strings.Index(key, "].")
	if open < 0 || closeAt < open {
		return 0
	}
	table, field := key[:open], key[closeAt+2:]
	var idx int
	if _, err := fmt.Sscanf(key[open+1:closeAt], "%d", &idx); err != nil {
		return 0
	}
	n, seen := 0, -1
	for _, l := range strings.Split(string(doc), "\n") {
		n++
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			if strings.HasPrefix(t, "[[") && strings.Contains(t, "]]") && cleanKey(t[2:strings.Index(t, "]]")]) == table {
				seen++
				continue
			}
			if seen == idx {
				return 0 // the entry ended without the key
			}
			continue
		}
		if seen != idx {
			continue
		}
		if eq := strings.IndexByte(t, '='); eq > 0 && cleanKey(t[:eq]) == field {
			return n
		}
	}
	return 0
}

// patternDurations are the duration keys of a [[kernelLog.patterns]] entry.
var patternDurations = map[string]bool{"dedupeWindow": true, "window": true, "quietPeriod": true}

// patternDurationError names the entry, key and line of a pattern's
// duration written as something else (dedupeWindow = 5), which the
// decoder reports without either.
func patternDurationError(path string, doc []byte) *Error {
	idx, in := -1, false
	for n, l := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = strings.HasPrefix(t, "[[") && strings.Contains(t, "]]") && cleanKey(t[2:strings.Index(t, "]]")]) == "kernelLog.patterns"
			if in {
				idx++
			}
			continue
		}
		eq := strings.IndexByte(t, '=')
		if !in || eq <= 0 || !patternDurations[cleanKey(t[:eq])] {
			continue
		}
		raw := strings.TrimSpace(t[eq+1:])
		if i := strings.Index(raw, " #"); i >= 0 {
			raw = strings.TrimSpace(raw[:i])
		}
		if len(raw) >= 2 && (raw[0] == '"' || raw[0] == '\'') && raw[len(raw)-1] == raw[0] {
			if _, err := time.ParseDuration(raw[1 : len(raw)-1]); err == nil {
				continue
			}
		}
		return &Error{File: path, Key: fmt.Sprintf("kernelLog.patterns[%d].%s", idx, cleanKey(t[:eq])), Line: n + 1,
			Reason: fmt.Sprintf("%s is not a duration: write a quoted duration such as \"5m\" or \"24h\"", raw)}
	}
	return nil
}
