package module

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxDump bounds what ParseDump reads: a whole CMIS module with every bank
// of every page is under 64 KiB of bytes, and its hex form about four
// times that.
const MaxDump = 1 << 20

// ErrNotDump is returned for input that is neither a raw dump nor hex.
var ErrNotDump = errors.New("not a module dump: neither raw bytes starting with a known SFF-8024 identifier nor hex lines")

// ParseDump reads a saved module dump in either form:
//   - raw: the bytes `ethtool -m DEV raw on` writes (the flat layout of
//     FromFlat: lower page, upper page 00h, then the memory map's pages);
//   - hex: lines of an offset and up to 16 bytes, as `ethtool -m DEV hex
//     on` prints them ("0x0000:\t\t11 07 ..."), or as hexdump -C and most
//     switch CLIs do. An offset below 0x80 is the lower page; 0x80-0xff is
//     the upper half of the current page, page 00h unless a line naming a
//     page ("page 3", "Upper Page 11h", "page 0x11") came before, which is
//     how a dump of `ethtool -m DEV page N hex on` outputs is annotated;
//     0x100 and above is an address in the flat layout.
//
// A page counts only when all 128 of its bytes are given; the lower page
// must be. Lines that carry no offset and bytes (headers, ASCII columns)
// are skipped.
func ParseDump(b []byte) (Memory, error) {
	if len(b) > MaxDump {
		return Memory{}, fmt.Errorf("module dump of %d bytes: larger than the %d bytes any module holds", len(b), MaxDump)
	}
	if len(b) >= PageSize && len(b)%PageSize == 0 && SpecOf(b[0]) != SpecUnknown && !looksLikeText(b) {
		return FromFlat(b)
	}
	return parseHex(b)
}

// looksLikeText reports whether b is printable ASCII and white space only:
// a raw dump has binary thresholds and readings, never only text.
func looksLikeText(b []byte) bool {
	for _, c := range b {
		if c != '\n' && c != '\r' && c != '\t' && (c < 0x20 || c > 0x7e) {
			return false
		}
	}
	return true
}

// pageBuf collects one page's bytes and which of them were given.
type pageBuf struct {
	b    [PageSize]byte
	have [PageSize]bool
	n    int
}

func (p *pageBuf) set(i int, v byte) {
	if !p.have[i] {
		p.have[i] = true
		p.n++
	}
	p.b[i] = v
}

func (p *pageBuf) full() bool { return p.n == PageSize }

func parseHex(b []byte) (Memory, error) {
	var lower pageBuf
	upper := map[byte]*pageBuf{}
	flat := map[int]byte{} // flat-layout addresses >= 256
	page := byte(0)
	lines := 0
	for line := range bytes.Lines(b) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		off, ok := parseOffset(fields[0])
		if !ok {
			if p, ok := pageNamed(fields); ok {
				page = p
			}
			continue
		}
		n := 0
		for _, f := range fields[1:] {
			if f == "-" || f == "." {
				continue
			}
			v, ok := parseByte(f)
			if !ok {
				break
			}
			at := off + n
			n++
			switch {
			case at < PageSize:
				lower.set(at, v)
			case at < 2*PageSize:
				if upper[page] == nil {
					upper[page] = &pageBuf{}
				}
				upper[page].set(at-PageSize, v)
			case at < MaxDump:
				flat[at] = v
			default:
				return Memory{}, fmt.Errorf("module dump: offset 0x%x beyond any module's memory", at)
			}
		}
		if n > 0 {
			lines++
		}
	}
	if lines == 0 {
		return Memory{}, ErrNotDump
	}
	if !lower.full() {
		return Memory{}, fmt.Errorf("module dump: the lower page (offsets 0x00-0x7f) has %d of its %d bytes", lower.n, PageSize)
	}
	m := Memory{Lower: append([]byte(nil), lower.b[:]...), Upper: map[byte][]byte{}}
	for p, buf := range upper {
		if buf.full() {
			m.Upper[p] = append([]byte(nil), buf.b[:]...)
		}
	}
	for i, p := range flatLayout(SpecOf(m.Lower[0])) {
		base := (2 + i) * PageSize
		var buf pageBuf
		for j := range PageSize {
			if v, ok := flat[base+j]; ok {
				buf.set(j, v)
			}
		}
		if buf.full() {
			m.Upper[p] = append([]byte(nil), buf.b[:]...)
		}
	}
	return m, nil
}

// parseOffset reads an offset token: "0x0080:", "0x80", "00000080", "80:".
func parseOffset(s string) (int, bool) {
	s = strings.TrimSuffix(s, ":")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" || len(s) > 8 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, false
	}
	return int(v), true
}

// parseByte reads exactly two hex digits.
func parseByte(s string) (byte, bool) {
	if len(s) != 2 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 8)
	return byte(v), err == nil
}

// pageNamed finds "page N" in a header line: N in hex with an optional 0x
// prefix or h suffix ("Upper Page 11h", "page 0x11", "page 3").
func pageNamed(fields []string) (byte, bool) {
	for i, f := range fields[:len(fields)-1] {
		if !strings.EqualFold(f, "page") {
			continue
		}
		s := strings.ToLower(strings.TrimRight(fields[i+1], ":,"))
		s = strings.TrimSuffix(strings.TrimPrefix(s, "0x"), "h")
		v, err := strconv.ParseUint(s, 16, 8)
		if err != nil {
			continue
		}
		return byte(v), true
	}
	return 0, false
}
