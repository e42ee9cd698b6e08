package genl

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Netlink attributes (struct nlattr): a 4-byte header (length including the
// header, type) then the payload, padded to 4 bytes. Host byte order, as
// the kernel writes them to a socket on the same machine.
const (
	attrHeader = 4
	// nlaNested and nlaNetByteOrder are flag bits of the type field
	// (NLA_F_NESTED, NLA_F_NET_BYTEORDER); the rest is the type.
	nlaNested       = 0x8000
	nlaNetByteOrder = 0x4000
	nlaTypeMask     = ^uint16(nlaNested | nlaNetByteOrder)
)

// ErrMalformed is returned for bytes that are not a well-formed attribute
// list or reply.
var ErrMalformed = errors.New("malformed netlink message")

func align4(n int) int { return (n + 3) &^ 3 }

// Attr is one attribute: its type (flags masked off) and payload.
type Attr struct {
	Type uint16
	Data []byte
}

// ParseAttrs splits b into attributes. A trailing pad shorter than a header
// is allowed; an attribute whose length runs past b is not.
func ParseAttrs(b []byte) ([]Attr, error) {
	var out []Attr
	for len(b) >= attrHeader {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		t := binary.NativeEndian.Uint16(b[2:4]) & nlaTypeMask
		if l < attrHeader || l > len(b) {
			return out, fmt.Errorf("attribute type %d of length %d in %d bytes: %w", t, l, len(b), ErrMalformed)
		}
		out = append(out, Attr{Type: t, Data: b[attrHeader:l]})
		next := align4(l)
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
	}
	return out, nil
}

// Uint8 reads a u8 attribute.
func (a Attr) Uint8() (uint8, bool) {
	if len(a.Data) < 1 {
		return 0, false
	}
	return a.Data[0], true
}

// Uint16 reads a u16 attribute.
func (a Attr) Uint16() (uint16, bool) {
	if len(a.Data) < 2 {
		return 0, false
	}
	return binary.NativeEndian.Uint16(a.Data), true
}

// Uint32 reads a u32 attribute.
func (a Attr) Uint32() (uint32, bool) {
	if len(a.Data) < 4 {
		return 0, false
	}
	return binary.NativeEndian.Uint32(a.Data), true
}

// Uint64 reads a u64 attribute, or a u32 one: the kernel's "uint" type
// (NLA_UINT) sends 4 bytes when the value fits.
func (a Attr) Uint64() (uint64, bool) {
	switch {
	case len(a.Data) >= 8:
		return binary.NativeEndian.Uint64(a.Data), true
	case len(a.Data) >= 4:
		return uint64(binary.NativeEndian.Uint32(a.Data)), true
	}
	return 0, false
}

// String reads a NUL-terminated string attribute (the terminator and
// anything after it dropped).
func (a Attr) String() string {
	for i, c := range a.Data {
		if c == 0 {
			return string(a.Data[:i])
		}
	}
	return string(a.Data)
}

// Nested parses a nested attribute's payload.
func (a Attr) Nested() ([]Attr, error) { return ParseAttrs(a.Data) }

// Encoder builds an attribute list.
type Encoder struct{ b []byte }

func (e *Encoder) put(t uint16, data []byte) {
	l := attrHeader + len(data)
	var h [attrHeader]byte
	binary.NativeEndian.PutUint16(h[0:2], uint16(l))
	binary.NativeEndian.PutUint16(h[2:4], t)
	e.b = append(e.b, h[:]...)
	e.b = append(e.b, data...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

// Uint8 appends a u8 attribute.
func (e *Encoder) Uint8(t uint16, v uint8) { e.put(t, []byte{v}) }

// Uint32 appends a u32 attribute.
func (e *Encoder) Uint32(t uint16, v uint32) {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	e.put(t, b[:])
}

// Uint64 appends a u64 attribute.
func (e *Encoder) Uint64(t uint16, v uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	e.put(t, b[:])
}

// String appends a NUL-terminated string attribute.
func (e *Encoder) String(t uint16, s string) { e.put(t, append([]byte(s), 0)) }

// Nested appends a nested attribute holding what fn encodes.
func (e *Encoder) Nested(t uint16, fn func(*Encoder)) {
	var inner Encoder
	fn(&inner)
	e.put(t|nlaNested, inner.b)
}

// Bytes returns the encoded list.
func (e *Encoder) Bytes() []byte { return e.b }
