package nvsmi

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkParse_H100OCI parses an 8-GPU, 18-NIC matrix with legend.
func BenchmarkParse_H100OCI(b *testing.B) {
	in, err := os.ReadFile("testdata/h100-oci.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}
