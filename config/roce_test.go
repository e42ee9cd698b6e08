package config

import (
	"strings"
	"testing"
	"time"
)

// DESIGN.md section 16: the RoCE classes are on by default, judged over a
// minute, with the thresholds config/roce.go gives the reasons for.
func TestDesign_16_RoCEDefaults(t *testing.T) {
	c, err := Parse("c.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := RoCEConfig{Enabled: true, Window: time.Minute, CongestedPerSecond: 1000, LossyPerSecond: 10,
		RxStarvedPerSecond: 10, PauseStormEvents: 0, PauseStormPercent: 50}
	if c.RoCE != want {
		t.Fatalf("defaults %+v, want %+v", c.RoCE, want)
	}
}

func TestDesign_16_RoCEOverridesAndValidation(t *testing.T) {
	c, err := Parse("c.toml", []byte("[roce]\nwindow = \"5m\"\nlossyPerSecond = 2.5\npauseStormPercent = 90\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.RoCE.Window != 5*time.Minute || c.RoCE.LossyPerSecond != 2.5 || c.RoCE.PauseStormPercent != 90 || c.RoCE.RxStarvedPerSecond != 10 {
		t.Fatalf("overrides %+v", c.RoCE)
	}
	for _, tc := range []struct{ toml, key string }{
		{"[roce]\nwindow = \"500ms\"\n", "roce.window"},
		{"[roce]\nwindow = \"2h\"\n", "roce.window"},
		{"[roce]\nlossyPerSecond = -1.0\n", "roce.lossyPerSecond"},
		{"[roce]\ncongestedPerSecond = nan\n", "roce.congestedPerSecond"},
		{"[roce]\nrxStarvedPerSecond = -0.5\n", "roce.rxStarvedPerSecond"},
		{"[roce]\npauseStormEvents = -1.0\n", "roce.pauseStormEvents"},
		{"[roce]\npauseStormPercent = 0.0\n", "roce.pauseStormPercent"},
		{"[roce]\npauseStormPercent = 101.0\n", "roce.pauseStormPercent"},
		{"[roce]\nwindwo = \"1m\"\n", "windwo"},
	} {
		_, err := Parse("c.toml", []byte(tc.toml))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: err %v, want one naming %s", tc.toml, err, tc.key)
		}
	}
}
