package module

import (
	"errors"
	"fmt"
	"slices"
)

// ErrNoModule says a cage answered that it holds no module (or that its
// driver reads none): mlx5 answers EIO for an empty cage (its MCIA
// register read fails, and older kernels log "query_mcia_reg failed" at
// error level for each try), drivers without module support EOPNOTSUPP.
// Readers wrap the errno with it, so the daemon can leave the cage alone
// until its port changes.
var ErrNoModule = errors.New("no module answers in the cage")

// PageSize is the size of the lower page and of every upper page.
const PageSize = 128

// Spec is the memory map a module uses, told by its SFF-8024 identifier.
type Spec int

const (
	SpecUnknown Spec = iota
	SpecSFF8636      // QSFP, QSFP+, QSFP28 (SFF-8436/SFF-8636)
	SpecCMIS         // QSFP-DD, OSFP, QSFP112 and the other CMIS modules
	SpecSFF8472      // SFP, SFP+, SFP28 (A0h identity, A2h diagnostics)
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
// bytes at offsets 128-255 with that page selected. An SFP module
// (SFF-8472) also answers at a second address, 0x51 (A2h): its
// diagnostics, of which A2 holds bytes 0-127 when they were read.
type Memory struct {
	Lower []byte
	Upper map[byte][]byte
	A2    []byte
}

// a2 returns SFF-8472's A2h bytes 0-127, or nil when they were not read
// whole.
func (m Memory) a2() []byte {
	if len(m.A2) != PageSize {
		return nil
	}
	return m.A2
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

// NextPages says which upper pages of bank 0 a reader should ask for next,
// given what m already holds (the lower page and upper page 00h first):
// only pages the module advertises and the diagnostics use, none it
// already has. A reader calls it until it returns nothing (at most three
// rounds), so a page is asked for only after the page that advertises it:
//   - SFF-8636: page 03h (thresholds) when the memory is paged (byte 2 bit
//     2 clear: page 03h comes with paging) and the module monitors
//     anything (not copper without byte 220's temperature and voltage
//     bits); pages 01h and 02h (byte 195 bits 6-7) hold nothing judged;
//   - CMIS: nothing for flat memory (byte 2 bit 7); else page 01h (what
//     the module advertises), then 02h (thresholds) when a monitor is
//     advertised, and 10h and 11h (lane controls, flags, monitors) when
//     cmisLanePages says the lanes have any. Bank 0 only: lanes 1-8.
//   - SFF-8472 and unknown maps: no pages (an SFP's diagnostics are at
//     address A2h: WantsA2).
func NextPages(m Memory) []byte {
	lo := m.Lower
	if len(lo) != PageSize || m.upper(0) == nil {
		return nil
	}
	var want []byte
	switch SpecOf(lo[0]) {
	case SpecSFF8636:
		if lo[2]&0x04 != 0 {
			return nil
		}
		up := m.upper(0)
		optical := up[147-128]>>4 < sffTechCopperPassiveUnequalized && up[130-128] != 0x21
		if optical || up[220-128]&0x30 != 0 {
			want = []byte{0x03}
		}
	case SpecCMIS:
		if lo[2]&0x80 != 0 {
			return nil
		}
		p1 := m.upper(1)
		if p1 == nil {
			return []byte{0x01}
		}
		// Thresholds for the module monitors (byte 159), and for lane
		// monitors (byte 160) unless the module is passive copper.
		if p1[159-128]&0x03 != 0 || (lo[85] != 0x03 && p1[160-128]&0x07 != 0) {
			want = append(want, 0x02)
		}
		if cmisLanePages(lo, p1) {
			want = append(want, 0x10, 0x11)
		}
	}
	var out []byte
	for _, p := range want {
		if m.upper(p) == nil {
			out = append(out, p)
		}
	}
	return out
}

// WantsA2 says whether an SFF-8472 module's diagnostics at address A2h
// are worth reading: A0h byte 92 bit 6 says it implements them. A passive
// DAC does not, and is not asked.
func WantsA2(lower []byte) bool {
	return len(lower) == PageSize && SpecOf(lower[0]) == SpecSFF8472 && lower[92]&sfpDDM != 0
}

// flatLayout is the order in which a flat dump holds its upper pages after
// the first 256 bytes (lower page, upper page 00h): the layout the legacy
// ETHTOOL_GMODULEEEPROM ioctl returns, which `ethtool -m DEV raw on` saves
// (ethtool falls back to it for whole-EEPROM dumps) and ethtool's own
// parsers read. SFF-8636: pages 01h, 02h, 03h (640 bytes, SFF-8636's
// ETH_MODULE_SFF_8636_MAX_LEN); CMIS: pages 01h, 02h, 10h, 11h (768 bytes,
// the layout of ethtool's first QSFP-DD parser). A driver may trim pages
// from the end only. SFF-8472 has no pages: its flat dump is A0h's 256
// bytes then A2h's 256 (512 bytes, ETH_MODULE_SFF_8472_LEN), of which A2h
// bytes 0-127 are the diagnostics.
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
	if SpecOf(b[0]) == SpecSFF8472 && len(b) >= 3*PageSize {
		m.A2 = slices.Clone(b[2*PageSize : 3*PageSize])
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
	if SpecOf(m.Lower[0]) == SpecSFF8472 && m.a2() != nil {
		up := m.upper(0)
		if up == nil {
			up = make([]byte, PageSize)
		}
		out = append(append(out, up...), m.a2()...)
		return append(out, make([]byte, PageSize)...)
	}
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
