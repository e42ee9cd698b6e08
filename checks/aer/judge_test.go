package aer

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/aerfile"
)

var th = Thresholds{CorrectablePerMinute: 10, Window: 10 * time.Minute, NonFatalQuiet: 30 * time.Minute}

func reading(t *testing.T, cor, nonfatal, fatal string) *aerfile.Reading {
	t.Helper()
	r := &aerfile.Reading{}
	for cl, s := range []string{cor, nonfatal, fatal} {
		if s == "-" {
			continue
		}
		r.Present[cl] = true
		if bad, why := aerfile.Parse([]byte(s), aerfile.Class(cl), &r.Counts[cl]); bad != 0 {
			t.Fatalf("%q: %s", s, why)
		}
	}
	return r
}

func newFn() *Function {
	return &Function{Address: "0000:3a:00.0", Label: "switch port above mlx5_0, mlx5_1", Check: event.InfiniBandDegradationCheck,
		Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}, {Device: "mlx5_1", Port: 1}}}
}

const (
	cor0 = "RxErr 0\nBadTLP 0\nTOTAL_ERR_COR 0\n"
	nf0  = "DLP 0\nCmpltTO 0\nMalfTLP 0\nTOTAL_ERR_NONFATAL 0\n"
	ft0  = "DLP 0\nCmpltTO 0\nMalfTLP 0\nTOTAL_ERR_FATAL 0\n"
)

type step struct {
	after             time.Duration
	cor, nonfatal, ft string
	want              []string // "raise <class>: <substring>" or "clear <class>"
}

func run(t *testing.T, steps []step) {
	t.Helper()
	mem, f, now := NewMemory(), newFn(), time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i, s := range steps {
		now = now.Add(s.after)
		specs, _ := f.Judge(mem, reading(t, s.cor, s.nonfatal, s.ft), now, th)
		var got []string
		for _, sp := range specs {
			if sp.IsHealthy {
				got = append(got, "clear "+sp.Metadata["aer"])
				continue
			}
			got = append(got, "raise "+sp.Metadata["aer"]+": "+sp.Message)
		}
		if len(got) != len(s.want) {
			t.Fatalf("step %d: got %q, want %q", i, got, s.want)
		}
		for j := range got {
			if !strings.HasPrefix(got[j], strings.SplitN(s.want[j], ": ", 2)[0]) || !strings.Contains(got[j], s.want[j][strings.Index(s.want[j]+": ", ": "):]) {
				t.Errorf("step %d: got %q, want %q", i, got[j], s.want[j])
			}
		}
	}
}

func TestAER_FirstSightIsABaseline(t *testing.T) {
	run(t, []step{{cor: "RxErr 5\nBadTLP 900\nTOTAL_ERR_COR 905\n", nonfatal: "DLP 0\nCmpltTO 3\nMalfTLP 0\nTOTAL_ERR_NONFATAL 3\n",
		ft: "DLP 1\nCmpltTO 0\nMalfTLP 0\nTOTAL_ERR_FATAL 1\n"}})
}

func TestAER_Rules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"fatal raises and stays until the counters reset", []step{
			{cor: cor0, nonfatal: nf0, ft: ft0},
			{after: time.Second, cor: cor0, nonfatal: nf0, ft: "DLP 0\nCmpltTO 0\nMalfTLP 2\nTOTAL_ERR_FATAL 2\n",
				want: []string{"raise fatal: PCIe AER on 0000:3a:00.0 (switch port above mlx5_0, mlx5_1): uncorrectable fatal errors MalfTLP +2"}},
			{after: 24 * time.Hour, cor: cor0, nonfatal: nf0, ft: "DLP 0\nCmpltTO 0\nMalfTLP 2\nTOTAL_ERR_FATAL 2\n"},
			{after: time.Second, cor: cor0, nonfatal: nf0, ft: ft0, want: []string{"clear fatal"}},
		}},
		{"non-fatal raises with the names that moved and clears after the quiet period", []step{
			{cor: cor0, nonfatal: nf0, ft: ft0},
			{after: time.Second, cor: cor0, nonfatal: "DLP 12\nCmpltTO 1\nMalfTLP 0\nTOTAL_ERR_NONFATAL 13\n", ft: ft0,
				want: []string{"raise nonfatal: uncorrectable non-fatal errors DLP +12, CmpltTO +1"}},
			{after: 29 * time.Minute, cor: cor0, nonfatal: "DLP 12\nCmpltTO 1\nMalfTLP 0\nTOTAL_ERR_NONFATAL 13\n", ft: ft0},
			{after: time.Minute, cor: cor0, nonfatal: "DLP 12\nCmpltTO 1\nMalfTLP 0\nTOTAL_ERR_NONFATAL 13\n", ft: ft0, want: []string{"clear nonfatal"}},
		}},
		{"correctable rate above the threshold raises and clears when it falls", []step{
			{cor: cor0, nonfatal: nf0, ft: ft0},
			{after: time.Minute, cor: "RxErr 0\nBadTLP 99\nTOTAL_ERR_COR 99\n", nonfatal: nf0, ft: ft0},
			{after: time.Minute, cor: "RxErr 1\nBadTLP 101\nTOTAL_ERR_COR 102\n", nonfatal: nf0, ft: ft0,
				want: []string{"raise correctable: correctable errors at 10.2 per minute over the last 10m0s (threshold 10.0); RxErr +1, BadTLP +2"}},
			{after: 30 * time.Minute, cor: "RxErr 1\nBadTLP 101\nTOTAL_ERR_COR 102\n", nonfatal: nf0, ft: ft0, want: []string{"clear correctable"}},
		}},
		{"a correctable rate hovering at the threshold does not flap", []step{
			{cor: cor0, nonfatal: nf0, ft: ft0},
			{after: time.Minute, cor: "RxErr 0\nBadTLP 110\nTOTAL_ERR_COR 110\n", nonfatal: nf0, ft: ft0,
				want: []string{"raise correctable: correctable errors at 11.0 per minute"}},
			{after: 9 * time.Minute, cor: "RxErr 0\nBadTLP 110\nTOTAL_ERR_COR 110\n", nonfatal: nf0, ft: ft0},
			{after: 90 * time.Second, cor: "RxErr 0\nBadTLP 170\nTOTAL_ERR_COR 170\n", nonfatal: nf0, ft: ft0},
		}},
		{"correctable errors below the rate are tolerated", []step{
			{cor: cor0, nonfatal: nf0, ft: ft0},
			{after: time.Minute, cor: "RxErr 0\nBadTLP 100\nTOTAL_ERR_COR 100\n", nonfatal: nf0, ft: ft0},
		}},
		{"a file that appears later is its own baseline", []step{
			{cor: cor0, nonfatal: "-", ft: "-"},
			{after: time.Second, cor: cor0, nonfatal: "DLP 4\nCmpltTO 0\nMalfTLP 0\nTOTAL_ERR_NONFATAL 4\n", ft: ft0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.steps) })
	}
}

func TestAER_AcknowledgeClearsFatal(t *testing.T) {
	mem, f, now := NewMemory(), newFn(), time.Now()
	f.Judge(mem, reading(t, cor0, nf0, ft0), now, th)
	specs, _ := f.Judge(mem, reading(t, cor0, nf0, "DLP 1\nCmpltTO 0\nMalfTLP 0\nTOTAL_ERR_FATAL 1\n"), now, th)
	if len(specs) != 1 || !specs[0].IsFatal || len(specs[0].Ports) != 2 || specs[0].Metadata["pci"] != "0000:3a:00.0" {
		t.Fatalf("raise %+v", specs)
	}
	ack := f.Acknowledge(mem, "uid 0")
	if len(ack) != 1 || !ack[0].IsHealthy || ack[0].CheckName != specs[0].CheckName || !strings.Contains(ack[0].Message, "acknowledged by uid 0") {
		t.Fatalf("ack %+v", ack)
	}
	if s, _ := f.Judge(mem, reading(t, cor0, nf0, "DLP 1\nCmpltTO 0\nMalfTLP 0\nTOTAL_ERR_FATAL 1\n"), now, th); len(s) != 0 {
		t.Errorf("the acknowledged count raised again: %+v", s)
	}
}

// A restart: a fresh Function (no ring) over the saved memory reports
// what moved while the daemon was down.
func TestAER_RestartReportsDownTimeErrors(t *testing.T) {
	mem, now := NewMemory(), time.Now()
	newFn().Judge(mem, reading(t, cor0, nf0, ft0), now, th)
	specs, _ := newFn().Judge(mem, reading(t, cor0, "DLP 0\nCmpltTO 2\nMalfTLP 0\nTOTAL_ERR_NONFATAL 2\n", ft0), now.Add(time.Hour), th)
	if len(specs) != 1 || specs[0].Metadata["moved"] != "CmpltTO +2" {
		t.Fatalf("got %+v", specs)
	}
}

func TestAER_SteadyJudgeAllocatesNothing(t *testing.T) {
	mem, f, now := NewMemory(), newFn(), time.Now()
	r := reading(t, realCorrectable, nf0, ft0)
	f.Judge(mem, r, now, th)
	if n := testing.AllocsPerRun(100, func() { f.Judge(mem, r, now, th) }); n != 0 {
		t.Errorf("a steady judgement allocates %v times", n)
	}
}

// realCorrectable is a real aer_dev_correctable of a ConnectX-7 function
// (kernel 6.x), as topology/aerfile's tests read it.
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
