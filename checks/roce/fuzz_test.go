package roce

import (
	"testing"
	"time"
)

// A state file section is hostile input: whatever it holds, Restore keeps
// the memory within its bounds and the check keeps judging without a
// panic or a wrapped delta.
func FuzzRestore(f *testing.F) {
	f.Add([]byte(`{"version":1,"ports":{"mlx5_2/1":{"start":"2026-03-01T12:00:00Z","have":3,"values":[5,6],"classes":{"roce-lossy":{"since":"2026-03-01T12:00:00Z"}}}}}`))
	f.Add([]byte(`{"version":1,"ports":{"mlx5_2/1":null,"x":{},"mlx5_2/0":{}}}`))
	f.Add([]byte(`{"version":9}`))
	f.Add([]byte(`{"version":1,"ports":{"mlx5_2/1":{"have":18446744073709551615,"values":[18446744073709551615],"classes":{"bogus":{}}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := newRig(t, defaults)
		r.c.Restore(raw)
		if len(r.c.mem.Ports) > MaxPorts {
			t.Fatalf("%d ports restored", len(r.c.mem.Ports))
		}
		r.tick(0)
		r.run(2*time.Minute, map[Signal]uint64{OutOfSequence: 1})
		r.c.Restate()
		if _, err := r.c.Marshal(); err != nil {
			t.Fatal(err)
		}
	})
}
