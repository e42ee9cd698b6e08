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
//     on` prints them ("0x0000:\t\t11 07 ..."), or as hexdump -C, sfputil
//     and most switch CLIs do, in sections named by header lines: "A0h" and
//     "A2h" (an SFP's two addresses, each from offset 0), "page N" and
//     "bank N" ("Upper Page 11h", "Bank 1 Page 10h"). An offset below 0x80
//     is the lower page; 0x80-0xff the upper half of the current bank and
//     page (bank 0 page 00h until a header says otherwise); 0x100 and above
//     an address in the flat layout.
//
// A page counts only when all 128 of its bytes are given; the lower page
// must be. A byte given twice is an error (a section whose header the
// reader did not recognise would otherwise overwrite another), and so is
// an identifier that names no memory map this package reads. Lines that
// carry no offset and bytes (other headers, ASCII columns) are skipped.
func ParseDump(b []byte) (Memory, error) {
	if len(b) > MaxDump {
		return Memory{}, fmt.Errorf("module dump of %d bytes: larger than the %d bytes any module holds", len(b), MaxDump)
	}
	var m Memory
	var err error
	if len(b) >= PageSize && len(b)%PageSize == 0 && SpecOf(b[0]) != SpecUnknown && !looksLikeText(b) {
		m, err = FromFlat(b)
	} else {
		m, err = parseHex(b)
	}
	if err != nil {
		return Memory{}, err
	}
	// A dump whose identifier names no memory map this package reads is
	// refused rather than decoded as nothing (identifier 0x4e, no vendor,
	// exit 0 is how a misread dump looks).
	if SpecOf(m.Lower[0]) == SpecUnknown {
		return Memory{}, fmt.Errorf("module dump: identifier 0x%02x (byte 0) is not a module type this reader knows (SFF-8024: SFP 03h, QSFP 0Ch/0Dh/11h, QSFP-DD 18h, OSFP 19h, ...); was the dump cut or two sections run together?", m.Lower[0])
	}
	return m, nil
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

func (p *pageBuf) full() bool { return p.n == PageSize }

// section is where a hex dump's lines are: which I2C address (A0h, or an
// SFP's A2h), and for A0h which bank and page the upper half (offsets
// 0x80-0xff) belongs to.
type section struct {
	a2         bool
	bank, page byte
}

func (s section) String() string {
	if s.a2 {
		return "A2h"
	}
	if s.bank != 0 {
		return fmt.Sprintf("bank %d page %02xh", s.bank, s.page)
	}
	return fmt.Sprintf("page %02xh", s.page)
}

// hexDump is what parseHex has read so far.
type hexDump struct {
	lower pageBuf
	upper map[section]*pageBuf // A0h upper halves by bank and page
	a2    [2]pageBuf           // A2h bytes 0-127 and 128-255
	flat  map[int]byte         // flat-layout addresses >= 256
}

// set stores byte v at offset at of section sec. A byte given twice is an
// error: a second section the reader did not recognise would otherwise
// overwrite the first (an SFP's A2h read over its A0h).
func (d *hexDump) set(sec section, at int, v byte) error {
	var p *pageBuf
	i := at
	switch {
	case sec.a2 && at < 2*PageSize:
		p, i = &d.a2[at/PageSize], at%PageSize
	case sec.a2:
		return fmt.Errorf("module dump: offset 0x%x of A2h: its memory ends at 0xff", at)
	case at < PageSize:
		p = &d.lower
	case at < 2*PageSize:
		if d.upper[sec] == nil {
			d.upper[sec] = &pageBuf{}
		}
		p, i = d.upper[sec], at-PageSize
	case at < MaxDump:
		if _, dup := d.flat[at]; dup {
			return fmt.Errorf("module dump: offset 0x%x given twice: two dumps in one file need a header line naming each page (\"page 3\", \"A2h\")", at)
		}
		d.flat[at] = v
		return nil
	default:
		return fmt.Errorf("module dump: offset 0x%x beyond any module's memory", at)
	}
	if p.have[i] {
		where := sec.String()
		if at < PageSize && !sec.a2 {
			where = "the lower page"
		}
		return fmt.Errorf("module dump: offset 0x%02x of %s given twice: a section this reader does not recognise follows another; name each in a header line (\"Upper page 03h\", \"bank 1 page 11h\", \"A2h\")", at, where)
	}
	p.have[i] = true
	p.n++
	p.b[i] = v
	return nil
}

func parseHex(b []byte) (Memory, error) {
	d := hexDump{upper: map[section]*pageBuf{}, flat: map[int]byte{}}
	var sec section
	lines := 0
	for line := range bytes.Lines(b) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		off, ok := parseOffset(fields[0])
		if !ok {
			sec = sectionNamed(fields, sec)
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
			if err := d.set(sec, off+n, v); err != nil {
				return Memory{}, err
			}
			n++
		}
		if n > 0 {
			lines++
		}
	}
	if lines == 0 {
		return Memory{}, ErrNotDump
	}
	if !d.lower.full() {
		return Memory{}, fmt.Errorf("module dump: the lower page (offsets 0x00-0x7f) has %d of its %d bytes", d.lower.n, PageSize)
	}
	m := Memory{Lower: append([]byte(nil), d.lower.b[:]...), Upper: map[byte][]byte{}}
	for s, buf := range d.upper {
		// Banks other than 0 hold lanes 9 and up, which are not decoded.
		if s.bank == 0 && buf.full() {
			m.Upper[s.page] = append([]byte(nil), buf.b[:]...)
		}
	}
	if d.a2[0].full() {
		m.A2 = append([]byte(nil), d.a2[0].b[:]...)
	}
	spec := SpecOf(m.Lower[0])
	from := func(base int) (pageBuf, bool) {
		var buf pageBuf
		for j := range PageSize {
			if v, ok := d.flat[base+j]; ok {
				buf.b[j], buf.have[j] = v, true
				buf.n++
			}
		}
		return buf, buf.full()
	}
	for i, p := range flatLayout(spec) {
		if buf, ok := from((2 + i) * PageSize); ok {
			if m.Upper[p] != nil {
				return Memory{}, fmt.Errorf("module dump: page %02xh given both in a page section and at its flat-layout offset 0x%x", p, (2+i)*PageSize)
			}
			m.Upper[p] = append([]byte(nil), buf.b[:]...)
		}
	}
	if spec == SpecSFF8472 {
		// ethtool's flat SFP dump: A2h follows A0h's 256 bytes.
		if buf, ok := from(2 * PageSize); ok {
			if m.A2 != nil {
				return Memory{}, fmt.Errorf("module dump: A2h given both in an A2h section and at flat offset 0x100")
			}
			m.A2 = append([]byte(nil), buf.b[:]...)
		}
	}
	return m, nil
}

// sectionNamed reads a header line: "A0h" or "A2h" (an SFP's two
// addresses, as sfputil's eeprom-hexdump and most switch CLIs print
// them), "page N" and "bank N" (N in hex with an optional 0x prefix or h
// suffix: "Upper Page 11h", "page 0x11", "Bank 1 Page 10h"), "lower page"
// (which puts nothing aside: offsets below 0x80 are the lower page
// anyway). A line naming none of these keeps the section as it was.
func sectionNamed(fields []string, cur section) section {
	out, named := cur, false
	for i, f := range fields {
		t := strings.ToLower(strings.Trim(f, ":,()[]"))
		switch t {
		case "a0h", "0xa0":
			return section{}
		case "a2h", "0xa2":
			return section{a2: true}
		}
		if i+1 >= len(fields) || (t != "page" && t != "bank") {
			continue
		}
		v, ok := hexNumber(fields[i+1])
		if !ok {
			continue
		}
		if !named {
			// A header starts a new A0h section: bank 0 unless it says.
			out, named = section{}, true
		}
		if t == "page" {
			out.page = v
		} else {
			out.bank = v
		}
	}
	return out
}

// hexNumber reads N of "page N": hex, an optional 0x prefix or h suffix.
func hexNumber(s string) (byte, bool) {
	s = strings.ToLower(strings.TrimRight(s, ":,()[]"))
	s = strings.TrimSuffix(strings.TrimPrefix(s, "0x"), "h")
	v, err := strconv.ParseUint(s, 16, 8)
	return byte(v), err == nil
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
