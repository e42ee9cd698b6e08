package ethtool

import "github.com/nichealth/nichealthd/topology/genl"

// encoder builds kernel replies for the tests through genl's encoder.
type encoder struct{ b []byte }

func (e *encoder) u8(t uint16, v uint8) {
	var g genl.Encoder
	g.Uint8(t, v)
	e.b = append(e.b, g.Bytes()...)
}

func (e *encoder) u32(t uint16, v uint32) {
	var g genl.Encoder
	g.Uint32(t, v)
	e.b = append(e.b, g.Bytes()...)
}
