package config

import "testing"

// TestFarEndOn_EnabledAndSelected (DESIGN.md section 13): the far end is
// read and judged only when [farEnd] is enabled (the default) and
// InfiniBandFarEndCheck is among the selected checks (all by default).
func TestFarEndOn_EnabledAndSelected(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      bool
	}{
		{"Defaults", "", true},
		{"Disabled", "[farEnd]\nenabled = false\n", false},
		{"OtherChecksOnly", "checks = [\"InfiniBandStateCheck\"]\n", false},
		{"Selected", "checks = [\"InfiniBandFarEndCheck\"]\n", true},
		{"SelectedButDisabled", "checks = [\"InfiniBandFarEndCheck\"]\n[farEnd]\nenabled = false\n", false},
	} {
		c, err := Parse("c.toml", []byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.FarEndOn(); got != tc.want {
			t.Errorf("%s: FarEndOn() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
