package event

import (
	"strings"
	"unicode/utf8"
)

// Clean returns s as valid UTF-8 without NUL bytes: every byte that is not
// part of a valid UTF-8 sequence, and every NUL, becomes the text \xNN.
// Strings that leave the daemon (D-Bus, journal, gRPC, JSON) must be valid
// UTF-8 — godbus refuses to send anything else, and protobuf refuses to
// marshal it — so one stray byte in a sysfs file or the node name would
// otherwise break a whole reply or drop a fatal signal (DESIGN.md section
// 9). The escape keeps the raw bytes visible to whoever debugs the file.
func Clean(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s // the common case allocates nothing
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == 0 {
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// CleanAll applies Clean to every element of ss in place and returns it.
func CleanAll(ss []string) []string {
	for i := range ss {
		ss[i] = Clean(ss[i])
	}
	return ss
}

func cleanMap(m map[string]string) map[string]string {
	dirty := false
	for k, v := range m {
		if Clean(k) != k || Clean(v) != v {
			dirty = true
			break
		}
	}
	if !dirty {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[Clean(k)] = Clean(v)
	}
	return out
}
