package component

import (
	"testing"
)

// recorder captures how Missing ended a test without ending this one.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = format }
func (r *recorder) Skip(args ...any)                  { r.skip = "skip" }

func TestMissing_SkipsLocallyFailsUnderCI(t *testing.T) {
	for _, tc := range []struct {
		ci        string
		wantFatal bool
	}{
		{"", false}, {"false", false}, {"0", false}, {"true", true}, {"1", true}, {"TRUE", true},
	} {
		t.Setenv(CIEnv, tc.ci)
		r := &recorder{TB: t}
		Missing(r, "groff not installed (apt-get install groff)")
		if (r.fatal != "") != tc.wantFatal || (r.skip != "") == tc.wantFatal {
			t.Errorf("CI=%q: fatal=%q skip=%q", tc.ci, r.fatal, r.skip)
		}
	}
}
