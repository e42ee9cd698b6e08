package main

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// fakeFabric answers as a fabric of one switch would, and records the
// budgets it was given.
type fakeFabric struct {
	deadlines []time.Duration
	fail      error
}

func (f *fakeFabric) Ports() ([]wire.LocalPort, error) {
	return []wire.LocalPort{{CA: "mlx5_0", Port: 1, GUID: "0x0002c90300a0b011", LID: 4, State: 4, PhysState: 5, LinkLayer: "InfiniBand"}}, f.fail
}
func (f *fakeFabric) Peer(l wire.Local, d time.Time) (wire.Peer, error) {
	f.deadlines = append(f.deadlines, time.Until(d))
	return wire.Peer{NodeGUID: "0x0000000000200001", PortGUID: "0x0000000000200001", NodeType: 2, NumPorts: 8, Port: 1, LID: 3, Description: "Switch2", State: 4, PhysState: 5}, f.fail
}
func (f *fakeFabric) PeerNode(l wire.Local, d time.Time) (wire.Peer, error) {
	return wire.Peer{NodeGUID: "0x0000000000200001", PortGUID: "0x0000000000200001", NodeType: 2, NumPorts: 8, Port: 1}, f.fail
}
func (f *fakeFabric) ClassPortInfo(l wire.Local, lid int, d time.Time) (wire.ClassPortInfo, error) {
	return wire.ClassPortInfo{CapMask: 0x1300}, f.fail
}
func (f *fakeFabric) PortCounters(l wire.Local, lid, port int, d time.Time) (wire.PortCounters, error) {
	return wire.PortCounters{SymbolErrorCounter: 55}, f.fail
}
func (f *fakeFabric) PortCountersExt(l wire.Local, lid, port int, errs bool, d time.Time) (wire.PortCountersExt, error) {
	return wire.PortCountersExt{PortXmitData: 1}, f.fail
}
func (f *fakeFabric) NodeInfo(l wire.Local, lid int, d time.Time) (wire.Node, error) {
	return wire.Node{NodeGUID: "0x0000000000200001", NodeType: 2, NumPorts: 8}, f.fail
}
func (f *fakeFabric) Close() {}

func answers(t *testing.T, out string) []wire.Answer {
	t.Helper()
	var as []wire.Answer
	for _, l := range strings.SplitAfter(strings.TrimSuffix(out, "\n"), "\n") {
		a, err := wire.DecodeAnswer([]byte(l))
		if err != nil {
			t.Fatalf("the helper wrote a line the daemon refuses: %q: %v", l, err)
		}
		as = append(as, a)
	}
	return as
}

// Every line in gets exactly one answer line out, in order, each one the
// daemon's decoder accepts: a good request its payload, a bad one an error
// of kind request (id 0 when the id could not be read).
func TestServe_OneAnswerPerLine(t *testing.T) {
	in := strings.Join([]string{
		`{"id":1,"op":"hello"}`,
		`{"id":2,"op":"ports"}`,
		`{"id":3,"op":"peer","timeoutMs":1500,"local":{"ca":"mlx5_0","port":1}}`,
		`{"id":4,"op":"classportinfo","local":{"ca":"mlx5_0","port":1},"lid":3}`,
		`{"id":5,"op":"portcounters","local":{"ca":"mlx5_0","port":1},"lid":3,"portNum":1}`,
		`{"id":6,"op":"portcountersext","local":{"ca":"mlx5_0","port":1},"lid":3,"portNum":1}`,
		`{"id":7,"op":"portcountersreset","local":{"ca":"mlx5_0","port":1},"lid":3,"portNum":1}`,
		`ibwarn: not a request`,
		strings.Repeat("x", 2*wire.MaxLine),
		`{"id":8,"op":"hello"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	fab := &fakeFabric{}
	if err := serve(strings.NewReader(in), &out, fab); err != nil {
		t.Fatal(err)
	}
	as := answers(t, out.String())
	if len(as) != 10 {
		t.Fatalf("%d answers to 10 lines:\n%s", len(as), out.String())
	}
	if as[0].Hello == nil || as[0].Hello.Version != wire.Version || as[1].Ports[0].CA != "mlx5_0" ||
		as[2].Peer == nil || as[2].Peer.Description != "Switch2" || as[3].CPI.CapMask != 0x1300 ||
		as[4].Counters.SymbolErrorCounter != 55 || as[5].Ext.PortXmitData != 1 {
		t.Errorf("payloads: %s", out.String())
	}
	for i, id := range []uint64{1, 2, 3, 4, 5, 6} {
		if as[i].ID != id || as[i].Err != nil {
			t.Errorf("answer %d: id %d err %v", i, as[i].ID, as[i].Err)
		}
	}
	for i := 6; i < 9; i++ {
		if as[i].Err == nil || as[i].Err.Kind != wire.ErrRequest || as[i].ID != 0 {
			t.Errorf("answer %d to a bad line: %+v", i, as[i])
		}
	}
	if as[9].ID != 8 || as[9].Hello == nil {
		t.Errorf("the line after an over-long one was not answered: %+v", as[9])
	}
	// The budget is the request's, not the helper's default.
	if d := fab.deadlines[0]; d > 1500*time.Millisecond || d < 1000*time.Millisecond {
		t.Errorf("peer ran with a budget of %v, want about 1.5 s", d)
	}
}

func TestServe_FailuresKeepTheirKind(t *testing.T) {
	var out bytes.Buffer
	fab := &fakeFabric{fail: &wire.Error{Kind: wire.ErrTimeout, Msg: strings.Repeat("é", wire.MaxText)}}
	if err := serve(strings.NewReader(`{"id":9,"op":"peer","local":{"guid":"0x0002c90300a0b011"}}`+"\n"), &out, fab); err != nil {
		t.Fatal(err)
	}
	a := answers(t, out.String())[0]
	if a.ID != 9 || a.Err == nil || a.Err.Kind != wire.ErrTimeout || a.Peer != nil {
		t.Fatalf("got %+v", a)
	}
	out.Reset()
	fab.fail = errors.New("plain")
	_ = serve(strings.NewReader(`{"id":10,"op":"portcounters","local":{"ca":"x","port":1},"lid":3,"portNum":1}`+"\n"), &out, fab)
	if a := answers(t, out.String())[0]; a.Err == nil || a.Err.Kind != wire.ErrMAD {
		t.Fatalf("got %+v", a)
	}
}

func TestDescribe_EscapesWhatIsNotText(t *testing.T) {
	for in, want := range map[string]string{
		"ibsw-leaf3\x00garbage":      "ibsw-leaf3",
		"MF0;leaf:MQM8700/U1   \x00": "MF0;leaf:MQM8700/U1",
		"gpu-a017 mlx5_0":            "gpu-a017 mlx5_0",
		"bad\xffbyte\x1b[31m":        `bad\xffbyte\x1b[31m`,
		// Bidi overrides and isolates, C1 controls (CSI U+009B): every
		// byte of the rune escaped.
		"ibsw\u202eevil\u202c":          `ibsw\xe2\x80\xaeevil\xe2\x80\xac`,
		"iso\u2066late\u2069":           `iso\xe2\x81\xa6late\xe2\x81\xa9`,
		"c1\u009b31m":                   `c1\xc2\x9b31m`,
		`back\slash`:                    `back\x5cslash`,
		strings.Repeat("\x01", 64):      strings.Repeat(`\x01`, 64),
		"Grüße":                         "Grüße",
		"\x00only after the terminator": "",
	} {
		if got := describe([]byte(in)); got != want {
			t.Errorf("describe(%q) = %q, want %q", in, got, want)
		}
	}
}

// The helper only reads: no libibmad or libibumad call that sends a Set
// (or resets counters) appears in its source, so it can never clear a
// switch's counters, which belong to the fabric's operators.
func TestSource_NeverSendsASet(t *testing.T) {
	b, err := os.ReadFile("umad.go")
	if err != nil {
		t.Fatal(err)
	}
	set := regexp.MustCompile(`(?i)\b(\w*_set_via|smp_set\w*|performance_reset\w*|pma_set\w*|\w*IB_MAD_METHOD_SET\w*|mad_build_pkt|mad_rpc\b|umad_send)\b`)
	if m := set.FindAllString(string(b), -1); len(m) > 0 {
		t.Fatalf("umad.go calls %v: the helper must only send Gets (smp_query_via, pma_query_via)", m)
	}
	for _, get := range []string{"smp_query_via", "pma_query_via"} {
		if !strings.Contains(string(b), get) {
			t.Fatalf("umad.go no longer calls %s: this test would pass vacuously", get)
		}
	}
}
