package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// TestReload_40_11_RefusalsThatTeach: a new user's mistakes, made in the
// running daemon's file: each reload is refused with the key (with the
// entry's index), its line and what to write, in the daemon's log; the
// running configuration stays (the generation does not move).
func TestReload_40_11_RefusalsThatTeach(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	rename := editStyles[0].edit
	good := n.configText(integConfig{})
	missing := filepath.Join(t.TempDir(), "ib-node-name-map")
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"zero poll interval", "pollingInterval = \"0s\"\n" + good, []string{"pollingInterval: line 1: 0s is outside 10ms..1h"}},
		{"metrics port out of range", "metricsAddress = \"127.0.0.1:99999\"\n" + good, []string{"metricsAddress: line 1:", "1..65535"}},
		{"threshold in words", good + "[[counterDetection.counters]]\nname = \"symbol_error\"\nthreshold = \"ten\"\n",
			[]string{"counterDetection.counters[0].threshold: line ", "is not a number", "threshold = 10"}},
		{"misspelt counter", good + "[[counterDetection.counters]]\nname = \"symbol_eror\"\nthreshold = 10\n",
			[]string{"counterDetection.counters[0].name: line ", "unknown counter", "did you mean symbol_error"}},
		{"missing node-name map", good + "[farEnd]\nnodeNameMap = \"" + missing + "\"\n", []string{"farEnd.nodeNameMap: line ", "does not exist"}},
	} {
		rename(t, n.cfg, "", tc.text)
		n.waitLog(tc.name+" refused", func(l string) bool {
			for _, w := range tc.want {
				if !strings.Contains(l, w) {
					return false
				}
			}
			return strings.Contains(l, "configuration refused")
		})
		if g := n.logGeneration(); g != 1 {
			t.Fatalf("%s: generation %d, the running configuration must stay", tc.name, g)
		}
	}
}
