package devlink

import "testing"

// TestCompareFirmware_40_12_AsVersionsNotStrings: mlx5 firmware versions
// (major.minor.subminor) are ordered part by part as numbers.
func TestCompareFirmware_40_12_AsVersionsNotStrings(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"28.9.1000", "28.10.1000", -1}, // strings order it the other way
		{"28.10.1000", "28.9.1000", 1},
		{"28.39.998", "28.39.1002", -1},
		{"28.39.1002", "28.39.1002", 0},
		{"16.35.02000", "16.35.2000", 0},
		{"22.41.1000", "28.39.1002", -1},
		{"28.39", "28.39.1002", -1},
		{"28.39.1002-rc", "28.39.1002-rc", 0},
	} {
		if got := CompareFirmware(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareFirmware(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestActivationPending_40_12_UpgradeAndRollback: a flashed version that
// differs as a version is pending, an older one a rollback.
func TestActivationPending_40_12_UpgradeAndRollback(t *testing.T) {
	for _, tc := range []struct {
		running, stored   string
		pending, rollback bool
	}{
		{"28.9.1000", "28.10.1000", true, false},
		{"28.10.1000", "28.9.1000", true, true},
		{"16.35.2000", "16.35.02000", false, false},
		{"28.39.1002", "", false, false},
	} {
		in := Info{Running: map[string]string{"fw.version": tc.running}, Stored: map[string]string{"fw.version": tc.stored}}
		if _, _, p := in.ActivationPending(); p != tc.pending || in.Rollback() != tc.rollback {
			t.Errorf("%s running, %s stored: pending %v rollback %v; want %v %v", tc.running, tc.stored, p, in.Rollback(), tc.pending, tc.rollback)
		}
	}
}

// TestReporter_40_12_PerPortReportersKeptApart: two ports' reporters of
// the same name parse to two reporters, each with its port index.
func TestReporter_40_12_PerPortReportersKeptApart(t *testing.T) {
	var got []Reporter
	for _, port := range []int{1, 2} {
		r, err := ParseReporter(reporterReply("0000:3b:00.0", port, "tx", 1, uint64(port), 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if !got[0].HasPort || !got[1].HasPort || got[0].Port != 1 || got[1].Port != 2 || got[0].ErrorCount != 1 || got[1].ErrorCount != 2 {
		t.Fatalf("%+v", got)
	}
}
