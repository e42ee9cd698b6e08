package ibnet

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/nichealth/nichealthd/fabric/fattree"
)

// BenchmarkParse_EDR2023 parses the 102-node, 144-link sample.
func BenchmarkParse_EDR2023(b *testing.B) {
	in, err := os.ReadFile("testdata/switchib-edr-2023.topo")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(in)
	}
}

// bigFabric is a three-tier NDR fat tree of 6,144 dual-rail hosts
// (radix 64): 7 MB of topology file, 14,000 nodes, 37,000 links.
func bigFabric(b *testing.B, portsReport bool) []byte {
	b.Helper()
	f, err := fattree.Build(fattree.Spec{Radix: 64, Hosts: 6144, Rails: 2, Pods: 12})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if portsReport {
		err = f.WritePorts(&buf)
	} else {
		err = f.WriteTopology(&buf)
	}
	if err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// Issue 32 row 7: what a large fabric's graph costs per byte of its
// ibnetdiscover output, streamed: bytes allocated while parsing and
// bytes the graph keeps (live heap after a collection).
func benchmarkParseLarge(b *testing.B, portsReport bool) {
	in := bigFabric(b, portsReport)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if g, err := ParseReader(bytes.NewReader(in)); err != nil || len(g.Problems) != 0 {
			b.Fatal(err, g.Problems)
		}
	}
	kept, alloc := footprint(in)
	b.ReportMetric(kept/float64(len(in)), "kept-B/input-B")
	b.ReportMetric(alloc/float64(len(in)), "alloc-B/input-B")
}

// footprint parses in once and returns the bytes the graph keeps and the
// bytes allocated on the way.
func footprint(in []byte) (float64, float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g, _ := ParseReader(bytes.NewReader(in))
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The input is kept too: it is in the heap both times.
	runtime.KeepAlive(g)
	runtime.KeepAlive(in)
	return float64(int64(after.HeapAlloc) - int64(before.HeapAlloc)), float64(after.TotalAlloc - before.TotalAlloc)
}

func BenchmarkParse_LargeTopology(b *testing.B)    { benchmarkParseLarge(b, false) }
func BenchmarkParse_LargePortsReport(b *testing.B) { benchmarkParseLarge(b, true) }
