package countertable

import (
	"errors"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

// FuzzMergeTOML: no configuration file can panic the loader, and whatever
// Merge accepts passes Validate.
func FuzzMergeTOML(f *testing.F) {
	f.Add([]byte("[[counterDetection.counters]]\nname = \"symbol_error\"\nthreshold = 5\n"))
	f.Add([]byte("[[counterDetection.counters]]\nname = \"x\"\npath = \"counters/x\"\nthresholdType = \"velocity\"\nthreshold = 1\nvelocityUnit = \"day\"\n"))
	f.Add([]byte("[[counterDetection.counters]]\nname = \"port_xmit_wait\"\nenabled = false\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg struct {
			CounterDetection struct {
				Counters []Override `toml:"counters"`
			} `toml:"counterDetection"`
		}
		if err := toml.Unmarshal(b, &cfg); err != nil {
			return
		}
		defs, err := Merge(Defaults(), cfg.CounterDetection.Counters)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v has no ValidationError", err)
			}
			return
		}
		if err := Validate(defs); err != nil {
			t.Fatalf("Merge accepted what Validate rejects: %v", err)
		}
		for _, d := range defs {
			if f := d.File("/port", "/net", "eth0"); f != "" && !strings.HasPrefix(f, "/port/") && !strings.HasPrefix(f, "/net/eth0/") || strings.HasSuffix(f, "/.") {
				t.Fatalf("%s resolves outside the port: %s", d.Name, f)
			}
		}
	})
}
