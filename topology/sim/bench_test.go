package sim

import "testing"

func benchmarkBuild(b *testing.B, shape string) {
	for i := 0; i < b.N; i++ {
		if _, err := Build(tempRoot(b), shape); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild_dgxH100(b *testing.B) { benchmarkBuild(b, "dgx-h100") }
func BenchmarkBuild_minimal(b *testing.B) { benchmarkBuild(b, "minimal") }
func BenchmarkBuild_xxl(b *testing.B)     { benchmarkBuild(b, "xxl") }

func BenchmarkBuild_xl(b *testing.B) { benchmarkBuild(b, "xl") }
