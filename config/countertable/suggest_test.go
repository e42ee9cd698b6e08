package countertable

import (
	"strings"
	"testing"
)

// TestMerge_40_11_UnknownCounterSaysDidYouMean: a default's name mistyped
// (and so without a path) is named as a typo of the nearest default, not
// as a custom counter missing its path.
func TestMerge_40_11_UnknownCounterSaysDidYouMean(t *testing.T) {
	s := func(v string) *string { return &v }
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		o    Override
		want string
	}{
		{Override{Name: s("symbol_eror"), Threshold: f(10)}, `counterDetection.counters[0] (name "symbol_eror"): name is an unknown counter: did you mean symbol_error?`},
		{Override{Name: s("link_downd"), Enabled: new(bool)}, "did you mean link_downed?"},
		{Override{Name: s("port_rcv_erorrs")}, "did you mean port_rcv_errors?"},
	} {
		_, err := Merge(TableDefaults(), []Override{tc.o})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "path is required") {
			t.Errorf("%s: %v, want %q", *tc.o.Name, err, tc.want)
		}
	}
	// A new name with its path is a custom counter, however close.
	if _, err := Merge(TableDefaults(), []Override{{Name: s("symbol_errors"), Path: s("counters/symbol_error"), ThresholdType: s("delta"), Threshold: f(1)}}); err != nil {
		t.Fatal(err)
	}
}
