package aerfile

import (
	"fmt"
	"testing"
)

// A real aer_dev_correctable of a ConnectX-7 function (kernel 6.x): one
// "NAME value" per AER status bit, TOTAL_ERR_COR last.
const realCorrectable = `RxErr 0
BadTLP 12
BadDLLP 3
Rollover 0
Timeout 1
NonFatalErr 0
CorrIntErr 0
HeaderOF 0
TOTAL_ERR_COR 16
`

func TestAER_ParseRealFile(t *testing.T) {
	var c Counts
	bad, why := Parse([]byte(realCorrectable), Correctable, &c)
	if bad != 0 || c.N != 8 || c.Total != 16 || !c.HasTotal {
		t.Fatalf("bad %d (%s), N %d, total %d", bad, why, c.N, c.Total)
	}
	if v, ok := c.Lookup("BadTLP"); !ok || v != 12 {
		t.Errorf("BadTLP = %d, %v", v, ok)
	}
	if string(c.Name(4)) != "Timeout" || c.Value(4) != 1 {
		t.Errorf("name 4 %q = %d", c.Name(4), c.Value(4))
	}
}

func TestAER_ParseMalformedLinesIgnored(t *testing.T) {
	for _, tc := range []struct {
		in     string
		n      int
		total  uint64
		bad    int
		reason string
	}{
		{"BadTLP\nTOTAL_ERR_COR 0\n", 0, 0, 1, ReasonNoValue},
		{"Bad-TLP 3\nRxErr 2\n", 1, 2, 1, ReasonBadName},
		{"RxErr 99999999999999999999999\nBadTLP 1\n", 1, 1, 1, ReasonBadValue},
		{"RxErr -1\n", 0, 0, 1, ReasonBadValue},
		{"TOTAL_ERR_FATAL 3\nRxErr 1\n", 1, 1, 1, ReasonWrongTotal},
		{"\n\n  RxErr 4  \r\n", 1, 4, 0, ""},
		{"", 0, 0, 0, ""},
	} {
		var c Counts
		bad, why := Parse([]byte(tc.in), Correctable, &c)
		if c.N != tc.n || c.Total != tc.total || bad != tc.bad || why != tc.reason {
			t.Errorf("%q: N %d total %d bad %d %q; want %d %d %d %q", tc.in, c.N, c.Total, bad, why, tc.n, tc.total, tc.bad, tc.reason)
		}
	}
	var many string
	for i := 0; i < MaxNames+3; i++ {
		many += fmt.Sprintf("E%d 1\n", i)
	}
	var c Counts
	if bad, why := Parse([]byte(many), NonFatal, &c); c.N != MaxNames || bad != 3 || why != ReasonTooMany {
		t.Errorf("too many: N %d bad %d %q", c.N, bad, why)
	}
}

func TestAER_ParseRootPortTotal(t *testing.T) {
	if v, ok := ParseTotal([]byte("7\n")); !ok || v != 7 {
		t.Errorf("got %d %v", v, ok)
	}
	if _, ok := ParseTotal([]byte("x\n")); ok {
		t.Error("garbage parsed")
	}
}

func TestAER_ParseAllocatesNothing(t *testing.T) {
	var c Counts
	b := []byte(realCorrectable)
	if n := testing.AllocsPerRun(100, func() { Parse(b, Correctable, &c) }); n != 0 {
		t.Errorf("Parse allocates %v times", n)
	}
}

func BenchmarkAER_Parse(b *testing.B) {
	var c Counts
	in := []byte(realCorrectable)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Parse(in, Correctable, &c)
	}
}

// Parsing never panics, never keeps more than MaxNames, and a file it
// accepts whole prints back to the same counts.
func FuzzParse(f *testing.F) {
	f.Add([]byte(realCorrectable))
	f.Add([]byte("Undefined 0\nDLP 1\nTOTAL_ERR_NONFATAL 1\n"))
	f.Add([]byte("TOTAL_ERR_COR 18446744073709551615\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c, d Counts
		bad, why := Parse(b, Correctable, &c)
		if c.N > MaxNames || (bad > 0) != (why != "") {
			t.Fatalf("N %d bad %d reason %q", c.N, bad, why)
		}
		if bad != 0 {
			return
		}
		var out []byte
		for i := 0; i < c.N; i++ {
			out = fmt.Appendf(out, "%s %d\n", c.Name(i), c.Value(i))
		}
		if c.HasTotal {
			out = fmt.Appendf(out, "TOTAL_ERR_COR %d\n", c.Total)
		}
		if bad, _ := Parse(out, Correctable, &d); bad != 0 || !c.Equal(&d) {
			t.Fatalf("%q reprinted as %q does not parse back", b, out)
		}
	})
}
