package module

import (
	"fmt"
	"slices"
)

// PageSize is the size of the lower page and of every upper page.
const PageSize = 128

// Spec is the memory map a module uses, told by its SFF-8024 identifier.
type Spec int

const (
	SpecUnknown Spec = iota
	SpecSFF8636      // QSFP, QSFP+, QSFP28 (SFF-8436/SFF-8636)
	SpecCMIS         // QSFP-DD, OSFP, QSFP112 and the other CMIS modules
	SpecSFF8472      // SFP, SFP+, SFP28: identified only
)

func (s Spec) String() string {
	switch s {
	case SpecSFF8636:
		return "SFF-8636"
	case SpecCMIS:
		return "CMIS"
	case SpecSFF8472:
		return "SFF-8472"
	}
	return "unknown"
}

// SpecOf classifies an SFF-8024 identifier (Table 4-1, rev 4.13): the value
// of byte 0 says which memory map every other byte follows.
func SpecOf(id byte) Spec {
	switch {
	case id == 0x0c || id == 0x0d || id == 0x11:
		return SpecSFF8636
	case id == 0x18 || id == 0x19 || id == 0x1b || (id >= 0x1e && id <= 0x25):
		return SpecCMIS
	case id == 0x02 || id == 0x03:
		return SpecSFF8472
	}
	return SpecUnknown
}

// IdentifierName is SFF-8024 Table 4-1's short name for the identifiers
// this package meets on NICs.
func IdentifierName(id byte) string {
	switch id {
	case 0x02:
		return "soldered module (SFF-8472)"
	case 0x03:
		return "SFP/SFP+/SFP28"
	case 0x0c:
		return "QSFP"
	case 0x0d:
		return "QSFP+"
	case 0x11:
		return "QSFP28"
	case 0x18:
		return "QSFP-DD"
	case 0x19:
		return "OSFP"
	case 0x1b:
		return "DSFP"
	case 0x1e:
		return "QSFP+ or later (CMIS)"
	case 0x1f:
		return "SFP-DD (CMIS)"
	case 0x20:
		return "SFP+ (CMIS)"
	case 0x21:
		return "OSFP-XD"
	}
	return fmt.Sprintf("identifier 0x%02x", id)
}

// Memory is a module's memory as read: the lower page (bytes 0-127 at I2C
// address 0x50) and the upper pages of bank 0 that were read, each the 128
// bytes at offsets 128-255 with that page selected. An SFP module's second
// address (0xA2, its diagnostics) is not read: SFP modules are identified
// from address 0x50 only.
type Memory struct {
	Lower []byte
	Upper map[byte][]byte
}

// upper returns page p's upper half, or nil when it was not read.
func (m Memory) upper(p byte) []byte {
	b := m.Upper[p]
	if len(b) != PageSize {
		return nil
	}
	return b
}

// Pages lists the upper pages read, in ascending order.
func (m Memory) Pages() []byte {
	var ps []byte
	for p, b := range m.Upper {
		if len(b) == PageSize {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// PagesWanted says which upper pages, besides page 00h, the diagnostics of
// a module need, given its lower page: none for a flat memory (passive
// copper: no page select at all) or an unknown map; 03h (thresholds) for
// SFF-8636; 01h (advertisements, the bias multiplier), 02h (thresholds),
// 10h (lane controls) and 11h (lane flags and monitors) for CMIS.
func PagesWanted(lower []byte) []byte {
	if len(lower) < 3 {
		return nil
	}
	switch SpecOf(lower[0]) {
	case SpecSFF8636:
		// Byte 2 bit 2 (Flat_mem): 1 = upper page 00h only.
		if lower[2]&0x04 != 0 {
			return nil
		}
		return []byte{0x03}
	case SpecCMIS:
		// Byte 2 bit 7 (MemoryModel): 1 = flat, lower memory and page 00h.
		if lower[2]&0x80 != 0 {
			return nil
		}
		return []byte{0x01, 0x02, 0x10, 0x11}
	}
	return nil
}

// flatLayout is the order in which a flat dump holds its upper pages after
// the first 256 bytes (lower page, upper page 00h): the layout the legacy
// ETHTOOL_GMODULEEEPROM ioctl returns, which `ethtool -m DEV raw on` saves
// (ethtool falls back to it for whole-EEPROM dumps) and ethtool's own
// parsers read. SFF-8636: pages 01h, 02h, 03h (640 bytes, SFF-8636's
// ETH_MODULE_SFF_8636_MAX_LEN); CMIS: pages 01h, 02h, 10h, 11h (768 bytes,
// the layout of ethtool's first QSFP-DD parser). A driver may trim pages
// from the end only.
func flatLayout(s Spec) []byte {
	switch s {
	case SpecSFF8636:
		return []byte{0x01, 0x02, 0x03}
	case SpecCMIS:
		return []byte{0x01, 0x02, 0x10, 0x11}
	}
	return []byte{}
}

// FromFlat splits a flat dump (lower page, upper page 00h, then the upper
// pages of its memory map's flat layout) into Memory. The dump must hold at
// least the lower page and be whole pages long; a trailing partial page is
// an error, extra pages beyond the layout are ignored. A page of a flat
// dump that the module does not implement reads as zeros (or 0xff) in the
// dump: decoding treats absent thresholds as absent, not as zero limits.
func FromFlat(b []byte) (Memory, error) {
	if len(b) < PageSize {
		return Memory{}, fmt.Errorf("module dump of %d bytes: shorter than the %d-byte lower page", len(b), PageSize)
	}
	if len(b)%PageSize != 0 {
		return Memory{}, fmt.Errorf("module dump of %d bytes: not whole %d-byte pages", len(b), PageSize)
	}
	m := Memory{Lower: slices.Clone(b[:PageSize]), Upper: map[byte][]byte{}}
	if len(b) >= 2*PageSize {
		m.Upper[0] = slices.Clone(b[PageSize : 2*PageSize])
	}
	for i, p := range flatLayout(SpecOf(b[0])) {
		at := (2 + i) * PageSize
		if at+PageSize > len(b) {
			break
		}
		m.Upper[p] = slices.Clone(b[at : at+PageSize])
	}
	return m, nil
}

// Flat is the inverse of FromFlat: the lower page, upper page 00h and the
// flat layout's pages up to the last one read (a page missing before it is
// written as zeros, as the ioctl does). A Memory without upper page 00h is
// the lower page alone.
func (m Memory) Flat() []byte {
	if len(m.Lower) != PageSize {
		return nil
	}
	out := slices.Clone(m.Lower)
	if m.upper(0) == nil {
		return out
	}
	out = append(out, m.upper(0)...)
	layout := flatLayout(SpecOf(m.Lower[0]))
	last := -1
	for i, p := range layout {
		if m.upper(p) != nil {
			last = i
		}
	}
	for _, p := range layout[:last+1] {
		if b := m.upper(p); b != nil {
			out = append(out, b...)
		} else {
			out = append(out, make([]byte, PageSize)...)
		}
	}
	return out
}
