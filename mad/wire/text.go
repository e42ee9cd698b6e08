package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether a rune must not reach an operator raw: C0 and
// C1 control characters (ESC starts a terminal escape sequence, CSI is
// U+009B), DEL, the bidirectional embeddings and overrides U+202A-U+202E
// and isolates U+2066-U+2069 (they reorder what a terminal, a web page or
// a Nagios UI shows after them: "Trojan Source").
func Unsafe(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// EscapeText writes each byte of every Unsafe rune of s as \xNN and
// leaves the rest alone, backslashes included: the helper already wrote
// its own backslashes as \x5c, so text escaped by it passes unchanged
// (escaping is idempotent).
func EscapeText(s string) string {
	i := strings.IndexFunc(s, Unsafe)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 12)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !Unsafe(r) {
			b.WriteRune(r)
			continue
		}
		var buf [utf8.UTFMax]byte
		for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	return b.String()
}
