package ibnet

import (
	"os"
	"testing"
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
