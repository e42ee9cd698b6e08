package metrics

import (
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// FuzzLabelValue: whatever a device, counter or sink is called, the page
// stays valid and the name reads back (invalid UTF-8 bytes as U+FFFD).
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"mlx5_0", `a\b`, `q"q`, "l\nf", "\xff", `\n`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		src := &fakeSource{
			ports: []dbusapi.PortView{{Device: name, Port: 1, Role: name, LinkLayer: name, State: name, PhysState: name, Rate: name,
				Counters: []dbusapi.CounterView{{Name: name, Unit: "/" + name, ThresholdType: "velocity"}}}},
			sinks: []SinkStats{{Name: name}},
		}
		src.mgr.Version = name
		_, page, _ := scrape(t, New().Handler(src))
		fams, _, err := parseExposition(page)
		if err != nil {
			t.Fatalf("invalid page for %q: %v\n%s", name, err, page)
		}
		want := string([]rune(name))
		if got := fams["nichealth_build_info"].samples[0].labels["version"]; got != want {
			t.Fatalf("version label %q, want %q", got, want)
		}
		for _, s := range fams["nichealth_hwcounter_value"].samples {
			if s.labels["device"] != want || s.labels["counter"] != want {
				t.Fatalf("labels %q, want %q", s.labels, want)
			}
		}
		if strings.Count(page, "\n# TYPE ") == 0 {
			t.Fatal("no TYPE lines")
		}
	})
}
