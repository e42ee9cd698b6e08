package ports

import (
	"io"
	"log/slog"
	"slices"
	"testing"
)

// The port checks' section of the state file is read back from a file a
// crash, a disk or a hand may have damaged: whatever it holds, restoring
// it never panics, leaves only entries this check could have written
// (every identity names a known device, as text of bounded size), and
// what it marshals restores to the same memory with nothing dropped.
func FuzzPortsRestore(f *testing.F) {
	f.Add([]byte(`{"version":1,"port_states":{"mlx5_3_1":{"state":"4: ACTIVE","physical_state":"5: LinkUp","device":"mlx5_3","port":1}},` +
		`"known_devices":["mlx5_3","mlx5_4"],"claimed":["mlx5_3"],"device_addrs":{"mlx5_3":"0000:3b:00.0"},` +
		`"identity":{"mlx5_3":{"role":"Compute","roleReason":"PIX to GPU 3","gpus":"GPU3 (0000:5d:00.0 GPU-3)"},"mlx5_9":{"role":"Compute"}}}`))
	f.Add([]byte(`{"version":1,"known_devices":["a"],"disappeared":["a","a"],"claimed":["a","../x"],"identity":{"a":{"role":"\xff"}}}`))
	f.Add([]byte(`{"version":1,"identity":null,"claimed":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := New(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		c.Restore(raw)
		m := c.Memory()
		for d := range m.Identity {
			if !slices.Contains(m.KnownDevices, d) {
				t.Fatalf("identity of %q, not a known device", d)
			}
		}
		for _, d := range m.KnownDevices {
			m.NICAt(m.DeviceAddrs[d])
			c.Identity(d)
		}
		c.GoneByCard()
		c.chk.Claimed = func(string, string) bool { return true }
		for i := 0; i < DisappearAfter+1; i++ {
			c.chk.Enumerated(m, map[string]Presence{}, "/x")
		}
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if dropped := New(slog.New(slog.NewTextHandler(io.Discard, nil)), nil).Restore(b); len(dropped) != 0 {
			t.Fatalf("a restored memory saved again drops %v", dropped)
		}
	})
}
