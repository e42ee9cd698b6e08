package counters

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/nichealth/nichealthd/topology/sysfs"
)

// FuzzParseCounter: whatever a counter file holds, ParseCounter either
// returns the decimal it spells or ErrUnreadable, and never panics; the
// evaluator can then never mistake garbage for 0.
func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "42\n", "18446744073709551615\n", "18446744073709551616\n",
		"N/A (no PMA)\n", "", "-1\n", " 7 \n", "1e3", "0x10"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := sysfs.ParseCounter(b)
		if err != nil {
			if !errors.Is(err, sysfs.ErrUnreadable) {
				t.Fatalf("error %v is not ErrUnreadable", err)
			}
			return
		}
		trimmed := strings.TrimSpace(string(b))
		want, perr := strconv.ParseUint(trimmed, 10, 64)
		if perr != nil || want != v || strings.HasPrefix(trimmed, "+") {
			t.Fatalf("ParseCounter(%q) = %d; strconv says %d, %v", b, v, want, perr)
		}
	})
}

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
