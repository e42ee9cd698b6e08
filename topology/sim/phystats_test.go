package sim

import (
	"os"
	"path/filepath"
	"testing"
)

func writeStats(t *testing.T, path string, names []string, vals []uint64) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, FormatPHYStats(names, vals), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// The simulator's file reads like the ioctl: values by wanted slot, absent
// names reported absent, a changed layout re-mapped, no allocation per read.
func TestPHY_SimFileStats(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "eth0")
	writeStats(t, p, []string{"rx_packets", "rx_corrected_bits_phy", "link_down_events_phy"}, []uint64{7, 1500, 0})
	f, err := OpenPHYStats(p, []string{"link_down_events_phy", "rx_corrected_bits_phy", "rx_symbol_err_phy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Value(1); !ok || v != 1500 {
		t.Fatalf("rx_corrected_bits_phy = %d, %v; want 1500", v, ok)
	}
	if _, ok := f.Value(2); ok {
		t.Fatal("absent rx_symbol_err_phy reported")
	}
	if a := testing.AllocsPerRun(50, func() { _ = f.Read() }); a != 0 {
		t.Fatalf("Read allocates %v times; want 0", a)
	}
	writeStats(t, p, []string{"rx_symbol_err_phy", "rx_corrected_bits_phy", "link_down_events_phy"}, []uint64{3, 18446744073709551615, 2})
	if err := f.Read(); err != nil {
		t.Fatal(err)
	}
	for slot, want := range []uint64{2, 18446744073709551615, 3} {
		if v, ok := f.Value(slot); !ok || v != want {
			t.Fatalf("after re-layout slot %d = %d, %v; want %d", slot, v, ok, want)
		}
	}
	if err := os.WriteFile(p, []byte("NIC statistics:\n     rx_symbol_err_phy: -1\n     rx_corrected_bits_phy: 1\n     link_down_events_phy: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Read(); err == nil {
		t.Fatal("a negative value was accepted")
	}
}

// The opener the daemon is given on a simulated host returns a plain nil
// Source with its error (a netdev without a statistics file), never a nil
// *FileStats inside a non-nil interface.
func TestPHY_SimOpenerFailureIsNilSource(t *testing.T) {
	src, err := PHYStatsOpener(t.TempDir())("enp0s0", []string{"rx_corrected_bits_phy"})
	if err == nil || src != nil {
		t.Fatalf("opener of a missing file = (%#v, %v); want (nil, error)", src, err)
	}
}

// BenchmarkSimFileRead is the simulated host's per-netdev cost: reopen and
// parse a 24-statistic file.
func BenchmarkSimFileRead(b *testing.B) {
	p := filepath.Join(b.TempDir(), "eth0")
	names := make([]string, 24)
	vals := make([]uint64, 24)
	for i := range names {
		names[i] = "stat_" + string(rune('a'+i)) + "_phy"
		vals[i] = uint64(i) * 1_000_003
	}
	if err := os.WriteFile(p, FormatPHYStats(names, vals), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := OpenPHYStats(p, []string{"stat_x_phy"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
