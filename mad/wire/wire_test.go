package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeAnswer_AcceptsWhatTheHelperSays(t *testing.T) {
	for _, line := range []string{
		`{"id":1,"hello":{"version":1,"helper":"nichealth-mad 0.2.0"}}`,
		`{"id":2,"ports":[{"ca":"mlx5_0","port":1,"guid":"0x0002c90300a0b011","lid":12,"smLid":1,"state":4,"physState":5,"linkLayer":"InfiniBand"}]}`,
		`{"id":3,"noPorts":true}`,
		`{"id":4,"peer":{"nodeGuid":"0x0000000000200001","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":1,"lid":3,"description":"ibsw-leaf3","state":4,"physState":5}}`,
		`{"id":5,"classPortInfo":{"capMask":4864,"capMask2":0}}`,
		`{"id":6,"counters":{"SymbolErrorCounter":65535,"LinkDownedCounter":255,"LocalLinkIntegrityErrors":15,"PortXmitWait":4294967295}}`,
		`{"id":7,"ext":{"PortXmitData":18446744073709551615,"errors":{"SymbolErrorCounter":4294967296}}}`,
		`{"id":8,"error":{"kind":"timeout","msg":"NodeInfo to 0,1: no answer in 500 ms"}}`,
	} {
		a, err := DecodeAnswer([]byte(line + "\n"))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		b, err := Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeAnswer(b)
		if err != nil || !reflect.DeepEqual(a, again) {
			t.Errorf("%s: round trip gave %+v, %v", line, again, err)
		}
	}
}

// Everything a confused helper could print is refused with a reason, never
// passed on: the daemon shows only what the fabric could have said.
func TestDecodeAnswer_RefusesWhatTheHelperCannotSay(t *testing.T) {
	long := strings.Repeat("x", MaxLine)
	for name, line := range map[string]string{
		"empty":              ``,
		"not JSON":           `ibwarn: [123] mad_rpc: _do_madrpc failed`,
		"no payload":         `{"id":1}`,
		"two payloads":       `{"id":1,"hello":{"version":1,"helper":"x"},"error":{"kind":"mad","msg":"x"}}`,
		"unknown field":      `{"id":1,"hello":{"version":1,"helper":"x"},"extra":1}`,
		"trailing data":      `{"id":1,"noPorts":true} {"id":2,"noPorts":true}`,
		"unknown error kind": `{"id":1,"error":{"kind":"surprise","msg":"x"}}`,
		"8-bit overflow":     `{"id":1,"counters":{"LinkDownedCounter":256}}`,
		"4-bit overflow":     `{"id":1,"counters":{"ExcessiveBufferOverrunErrors":16}}`,
		"16-bit overflow":    `{"id":1,"counters":{"SymbolErrorCounter":65536}}`,
		"negative counter":   `{"id":1,"counters":{"SymbolErrorCounter":-1}}`,
		"bad GUID":           `{"id":1,"peer":{"nodeGuid":"0x2","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":1,"lid":3}}`,
		"upper-case GUID":    `{"id":1,"peer":{"nodeGuid":"0x00000000002000AB","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":1,"lid":3}}`,
		"peer port past end": `{"id":1,"peer":{"nodeGuid":"0x0000000000200001","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":9,"lid":3}}`,
		"node type 7":        `{"id":1,"peer":{"nodeGuid":"0x0000000000200001","portGuid":"0x0000000000200001","nodeType":7,"numPorts":8,"port":1,"lid":3}}`,
		"LID past 16 bits":   `{"id":1,"peer":{"nodeGuid":"0x0000000000200001","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":1,"lid":65536}}`,
		"long description":   `{"id":1,"peer":{"nodeGuid":"0x0000000000200001","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":1,"lid":3,"description":"` + strings.Repeat("d", MaxText+1) + `"}}`,
		"control in CA name": `{"id":1,"ports":[{"ca":"mlx5\u0000","port":1,"guid":"0x0002c90300a0b011"}]}`,
		"no ports and ports": `{"id":1,"noPorts":true,"ports":[{"ca":"mlx5_0","port":1,"guid":"0x0002c90300a0b011"}]}`,
		"invalid UTF-8":      "{\"id\":1,\"error\":{\"kind\":\"mad\",\"msg\":\"\xff\"}}",
		"too long":           `{"id":1,"error":{"kind":"mad","msg":"` + long + `"}}`,
	} {
		if a, err := DecodeAnswer([]byte(line)); err == nil {
			t.Errorf("%s: accepted as %+v", name, a)
		}
	}
}

func TestDecodeAnswer_TooManyPorts(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id":1,"ports":[`)
	for i := 0; i <= MaxPorts; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"ca":"m","port":1,"guid":"0x0002c90300a0b011"}`)
	}
	b.WriteString(`]}`)
	if _, err := DecodeAnswer([]byte(b.String())); err == nil {
		t.Fatalf("%d ports accepted", MaxPorts+1)
	}
}

func TestDecodeRequest(t *testing.T) {
	ok := []string{
		`{"id":1,"op":"hello"}`,
		`{"id":2,"op":"ports","timeoutMs":1000}`,
		`{"id":3,"op":"peer","timeoutMs":1000,"local":{"ca":"mlx5_0","port":1}}`,
		`{"id":4,"op":"peer","timeoutMs":1000,"local":{"guid":"0x0002c90300a0b011"}}`,
		`{"id":5,"op":"classportinfo","timeoutMs":1000,"local":{"ca":"ibsim0","port":1},"lid":3}`,
		`{"id":6,"op":"portcounters","timeoutMs":1000,"local":{"ca":"ibsim0","port":1},"lid":3,"portNum":17}`,
		`{"id":7,"op":"portcountersext","timeoutMs":1000,"local":{"ca":"ibsim0","port":1},"lid":3,"portNum":17}`,
	}
	for _, line := range ok {
		if _, err := DecodeRequest([]byte(line)); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	bad := []string{
		`{"id":1,"op":"portcountersreset","local":{"ca":"ibsim0","port":1},"lid":3}`,
		`{"id":1,"op":"set"}`,
		`{"id":1,"op":"peer"}`,
		`{"id":1,"op":"peer","local":{"ca":"mlx5_0","port":1,"guid":"0x0002c90300a0b011"}}`,
		`{"id":1,"op":"peer","local":{"ca":"mlx5_0","port":0}}`,
		`{"id":1,"op":"portcounters","local":{"ca":"ibsim0","port":1},"lid":0,"portNum":1}`,
		`{"id":1,"op":"portcounters","local":{"ca":"ibsim0","port":1},"lid":49152,"portNum":1}`,
		`{"id":1,"op":"portcounters","local":{"ca":"ibsim0","port":1},"lid":3,"portNum":255}`,
		`{"id":1,"op":"hello","timeoutMs":600001}`,
	}
	for _, line := range bad {
		if r, err := DecodeRequest([]byte(line)); err == nil {
			t.Errorf("%s: accepted as %+v", line, r)
		}
	}
}

// The saturation points the far-end check relies on, pinned as the IBTA
// widths (DESIGN.md section 2, field facts: link_downed 255,
// port_xmit_discards 65535, port_xmit_wait 4294967295, excessive buffer
// overruns 15).
func TestFields_Widths(t *testing.T) {
	want := map[string]uint64{
		"SymbolErrorCounter": 65535, "LinkErrorRecoveryCounter": 255, "LinkDownedCounter": 255,
		"PortRcvErrors": 65535, "PortXmitDiscards": 65535, "LocalLinkIntegrityErrors": 15,
		"ExcessiveBufferOverrunErrors": 15, "VL15Dropped": 65535, "PortXmitWait": 4294967295,
	}
	for _, f := range Fields {
		if w, ok := want[f.Name]; ok && f.Max() != w {
			t.Errorf("%s saturates at %d, want %d", f.Name, f.Max(), w)
		}
	}
	var c PortCounters
	c.SymbolErrorCounter, c.PortXmitWait = 1, 17
	v := c.Values()
	if v[0] != 1 || v[16] != 17 || len(v) != len(Fields) {
		t.Fatalf("Values out of Fields' order: %v", v)
	}
}

func TestGUID(t *testing.T) {
	if s := FormatGUID(0x2c90300a0b011); s != "0x0002c90300a0b011" {
		t.Fatal(s)
	}
	if g, err := ParseGUID("0x0002c90300a0b011"); err != nil || g != 0x2c90300a0b011 {
		t.Fatal(g, err)
	}
	if _, err := ParseGUID("0002c90300a0b011"); err == nil {
		t.Fatal("GUID without 0x accepted")
	}
}

func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"id":4,"peer":{"nodeGuid":"0x0000000000200001","portGuid":"0x0000000000200001","nodeType":2,"numPorts":8,"port":1,"lid":3,"description":"Switch2","state":4,"physState":5}}`))
	f.Add([]byte(`{"id":6,"counters":{"SymbolErrorCounter":55}}`))
	f.Add([]byte(`{"id":2,"ports":[{"ca":"ibsim0","port":1,"guid":"0x0000000000100004","lid":4,"smLid":1,"state":4,"physState":5,"linkLayer":"InfiniBand"}]}`))
	f.Add([]byte(`{"id":8,"error":{"kind":"timeout","msg":"x"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := DecodeAnswer(line)
		if err != nil {
			return
		}
		// What is accepted is what the helper can say: it encodes within
		// the line bound and decodes to the same answer.
		b, err := Encode(a)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", line, err)
		}
		again, err := DecodeAnswer(b)
		if err != nil || !reflect.DeepEqual(a, again) {
			t.Fatalf("accepted %q; its encoding %q gives %+v, %v", line, b, again, err)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"id":6,"op":"portcounters","timeoutMs":1000,"local":{"ca":"ibsim0","port":1},"lid":3,"portNum":17}`))
	f.Add([]byte(`{"id":4,"op":"peer","timeoutMs":1000,"local":{"guid":"0x0002c90300a0b011"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRequest(line)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted %q that does not validate: %v", line, err)
		}
	})
}

// DESIGN.md section 9 (strings leaving the daemon) and 13: a peer's
// NodeDescription carrying ESC (a terminal escape sequence), a C1 CSI, a
// bidi override U+202E or an isolate U+2066 is escaped when the answer is
// decoded, whatever the helper sent, so no view, event message or Nagios
// line shows it raw; text the helper already escaped passes unchanged.
func TestDesign_13_PeerDescriptionControlsEscapedAtTheWire(t *testing.T) {
	for in, want := range map[string]string{
		"ibsw-leaf1\x1b[2Jport":         `ibsw-leaf1\x1b[2Jport`,
		"ibsw-\u202eeliforp":            `ibsw-\xe2\x80\xaeeliforp`,
		"ibsw-\u2066x\u2069":            `ibsw-\xe2\x81\xa6x\xe2\x81\xa9`,
		"csi\u009b31m":                  `csi\xc2\x9b31m`,
		"del\x7f":                       `del\x7f`,
		`MF0;ibsw-leaf1:MQM8700/U1`:     `MF0;ibsw-leaf1:MQM8700/U1`,
		`already\x1b escaped\x5c`:       `already\x1b escaped\x5c`,
		"Grüße aus dem Rechenzentrum ✓": "Grüße aus dem Rechenzentrum ✓",
	} {
		line, err := json.Marshal(Answer{ID: 7, Peer: &Peer{NodeGUID: "0xb83fd20300a01000", PortGUID: "0xb83fd20300a01000", NodeType: 2, NumPorts: 41,
			Port: 17, LID: 3, Description: in, State: 4, PhysState: 5}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeAnswer(line)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if a.Peer.Description != want {
			t.Errorf("%q decoded as %q, want %q", in, a.Peer.Description, want)
		}
		if again := EscapeText(a.Peer.Description); again != a.Peer.Description {
			t.Errorf("escaping %q twice gives %q", a.Peer.Description, again)
		}
	}
}
