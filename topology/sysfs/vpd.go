package sysfs

import (
	"bytes"
	"fmt"
)

// VPD is what a PCI function's Vital Product Data (its sysfs "vpd" file)
// says, as far as the daemon uses it: the product name (the identifier
// string), and the read-only (VPD-R) and read-write (VPD-W) keywords, e.g.
// PN (part number), SN (serial number), V0..VZ (vendor specific).
type VPD struct {
	Name     string
	Keywords map[string]string
}

// Serial is the board serial number (keyword SN), "" when absent.
func (v VPD) Serial() string { return v.Keywords["SN"] }

// LimitedPF reports whether the VPD carries NVIDIA's SW_MNG marker
// (SMDL=SW_MNG in a vendor keyword): the ConnectX bridge functions of an
// HGX B200/B300 baseboard that NVIDIA Fabric Manager and its NVLink subnet
// manager own ("limited PFs"). Their firmware refuses the port counters
// (mlx5 logs an ACCESS_REG error at every read), and NVIDIA's own tools
// recognise them by exactly this marker in the VPD, read from PCI sysfs
// without any RDMA driver.
func (v VPD) LimitedPF() bool {
	for _, val := range v.Keywords {
		if hasSWMng(val) {
			return true
		}
	}
	return hasSWMng(v.Name)
}

func hasSWMng(s string) bool {
	// The marker is a token of a "KEY=VALUE:KEY=VALUE" vendor string
	// (SMDL=SW_MNG); matching the value alone, as NVIDIA's start script
	// does, also takes a firmware that lays the string out differently.
	for i := 0; i+len(swMng) <= len(s); i++ {
		if s[i:i+len(swMng)] == swMng {
			return true
		}
	}
	return false
}

const swMng = "SW_MNG"

// maxVPDKeywords bounds what one VPD file can make the parser keep: the
// spec's resource lengths allow 64 KiB of one-byte keywords.
const maxVPDKeywords = 256

// ParseVPD decodes the resource list of PCI VPD (PCI Local Bus spec 6.28,
// PCIe spec "Vital Product Data"): large resources are a tag byte with
// the top bit set and a little-endian 16-bit length (0x82 identifier
// string, 0x90 VPD-R, 0x91 VPD-W), small resources pack name and length
// in one byte (0x78 is the end tag). VPD-R and VPD-W hold keywords: two
// ASCII characters, a length byte, the data.
//
// Outcomes:
//   - (vpd, nil): parsed up to the end tag, or to the end of b when the
//     kernel stopped reading before it;
//   - (vpd, err): a malformed resource; vpd holds what came before it, and
//     err says where (a VPD that a firmware bug garbled must not stop the
//     serial number read before the damage from being used).
//
// Keyword values are trimmed of NULs and spaces; a keyword that repeats
// keeps its first value. RV (checksum) and RW (free space) are skipped.
func ParseVPD(b []byte) (VPD, error) {
	v := VPD{Keywords: map[string]string{}}
	for off := 0; off < len(b); {
		tag := b[off]
		if tag&0x80 == 0 {
			name, n := (tag>>3)&0x0f, int(tag&0x07)
			if name == 0x0f {
				return v, nil // end tag
			}
			off += 1 + n
			continue
		}
		if off+3 > len(b) {
			return v, fmt.Errorf("vpd: large resource at offset %d is truncated", off)
		}
		n := int(b[off+1]) | int(b[off+2])<<8
		start := off + 3
		if start+n > len(b) {
			return v, fmt.Errorf("vpd: resource 0x%02x at offset %d claims %d bytes, %d remain", tag, off, n, len(b)-start)
		}
		data := b[start : start+n]
		switch tag {
		case 0x82:
			v.Name = vpdString(data)
		case 0x90, 0x91:
			if err := v.keywords(data, start); err != nil {
				return v, err
			}
		}
		off = start + n
	}
	return v, nil
}

func (v *VPD) keywords(data []byte, base int) error {
	for off := 0; off < len(data); {
		if off+3 > len(data) {
			return fmt.Errorf("vpd: keyword header at offset %d is truncated", base+off)
		}
		kw := string(data[off : off+2])
		n := int(data[off+2])
		if off+3+n > len(data) {
			return fmt.Errorf("vpd: keyword %q at offset %d claims %d bytes, %d remain", printable(kw), base+off, n, len(data)-off-3)
		}
		val := data[off+3 : off+3+n]
		off += 3 + n
		if kw == "RV" || kw == "RW" || !validKeyword(kw) {
			continue
		}
		if _, seen := v.Keywords[kw]; !seen && len(v.Keywords) < maxVPDKeywords {
			v.Keywords[kw] = vpdString(val)
		}
	}
	return nil
}

// validKeyword accepts the spec's keyword alphabet: two upper-case
// letters or digits.
func validKeyword(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return len(k) == 2
}

// vpdString keeps printable ASCII: VPD strings are ASCII by spec, and what
// is not (padding, a corrupted byte) must not reach an event or a journal
// field.
func vpdString(b []byte) string {
	b = bytes.Trim(b, "\x00 \t")
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		}
	}
	return string(out)
}

func printable(s string) string { return vpdString([]byte(s)) }
