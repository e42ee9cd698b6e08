package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once lose nothing and race on nothing (-race).
func TestBuffer_ConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "x\n"); n != 400 {
		t.Fatalf("%d lines, want 400", n)
	}
}
