package overlay

import (
	"encoding/json"
	"slices"
	"testing"
)

// What Prometheus says of the fabric shares is a fleet's labels and
// numbers: whatever they are, the overlay keeps only switch ports with a
// GUID and a port number of a switch, verdicts from its vocabulary, and
// names as data.
func FuzzAddFabric(f *testing.F) {
	f.Add("0x0002c90300000001", "7", "node-a", "SymbolErrorCounter", "critical", "NICFabricLinkDowned", "12")
	f.Add("0x1", "255", "<img src=x>", "LinkDownedCounter", "warning", "x", "NaN")
	f.Add("zz", "-1", "", "", "", "", "+Inf")
	f.Add("0x0", "256", "n", "c", "s", "a", "1e400")
	f.Fuzz(func(t *testing.T, guid, port, instance, counter, severity, alert, value string) {
		s := sample{Metric: map[string]string{"switch_guid": guid, "port": port, "instance": instance, "counter": counter,
			"severity": severity, "alertname": alert, "switch_name": instance}, Value: [2]any{1.0, value}}
		o := newOverlay("fuzz")
		o.addFabric([]sample{s}, []sample{s}, []sample{s}, []sample{s})
		for _, p := range o.Switches {
			if p.SwitchGUID == 0 || p.Port < 0 || p.Port > 255 {
				t.Fatalf("kept %+v", p)
			}
			if o.Switch(p.SwitchGUID, p.Port) != p {
				t.Fatalf("%+v is not found by its key", p)
			}
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Switches []struct {
				Verdict string `json:"verdict"`
			} `json:"switches"`
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		for _, p := range back.Switches {
			if !slices.Contains([]string{"", "unknown", "healthy", "degraded", "fatal"}, p.Verdict) {
				t.Fatalf("verdict %q left the vocabulary", p.Verdict)
			}
		}
	})
}
