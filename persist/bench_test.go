package persist

import (
	"path/filepath"
	"testing"
)

// BenchmarkSaveIfChanged_Unchanged is the cost paid every poll when nothing
// changed: encode 13 ports x 14 counters and compare.
func BenchmarkSaveIfChanged_Unchanged(b *testing.B) {
	s := NewStore(filepath.Join(b.TempDir(), "state.json"))
	st := bigState()
	if _, err := s.SaveIfChanged(st); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if saved, err := s.SaveIfChanged(st); saved || err != nil {
			b.Fatal(saved, err)
		}
	}
}

// BenchmarkSaveIfChanged_Changed is a poll that changed one counter:
// encode, write, fsync file and directory, rename.
func BenchmarkSaveIfChanged_Changed(b *testing.B) {
	s := NewStore(filepath.Join(b.TempDir(), "state.json"))
	st := bigState()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.OutboxSeq++
		if saved, err := s.SaveIfChanged(st); !saved || err != nil {
			b.Fatal(saved, err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.json")
	if err := Save(path, bigState()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, status, err := Load(path); err != nil || status != LoadLoaded {
			b.Fatal(status, err)
		}
	}
}
