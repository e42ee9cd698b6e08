package config_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/config/countertable"

	daemonconfig "github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/topology"
)

const shipped = "config.toml"

func read(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// uncomment turns every "#key = value" and "#[table]" line into a setting;
// "# prose" stays a comment.
func uncomment(s string) string {
	return regexp.MustCompile(`(?m)^#([A-Za-z\[])`).ReplaceAllString(s, "$1")
}

// comparable drops what legitimately differs between two loads (compiled
// regular expressions are compared through their source text).
func comparable(c *daemonconfig.Config) daemonconfig.Config {
	v := *c
	v.Path, v.Digest = "", ""
	v.Filter = topology.Filter{}
	return v
}

// As shipped, the file changes nothing: it loads to the built-in defaults.
func TestDefaultConfig_AsShippedIsTheBuiltInDefaults(t *testing.T) {
	got, err := daemonconfig.Parse(shipped, []byte(read(t)))
	if err != nil {
		t.Fatalf("the shipped file is refused: %v", err)
	}
	want, err := daemonconfig.Parse(shipped, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(got), comparable(want)) {
		t.Errorf("shipped file differs from the built-in defaults:\n got %+v\nwant %+v", comparable(got), comparable(want))
	}
}

// Every value the file shows is the real default: uncommenting all of them
// must not change the configuration (seed 10.2 for the counter table).
func TestDefaultConfig_10_2_ShownValuesAreTheDefaults(t *testing.T) {
	text := uncomment(read(t))
	got, err := daemonconfig.Parse(shipped, []byte(text))
	if err != nil {
		t.Fatalf("the shipped file with every setting uncommented is refused: %v", err)
	}
	want, err := daemonconfig.Parse(shipped, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Counters, countertable.TableDefaults()) {
		t.Errorf("counter table shown differs from countertable.TableDefaults():\n got %+v\nwant %+v", got.Counters, countertable.TableDefaults())
	}
	if !reflect.DeepEqual(comparable(got), comparable(want)) {
		t.Errorf("shown values differ from the built-in defaults:\n got %+v\nwant %+v", comparable(got), comparable(want))
	}
	if n := strings.Count(text, "\n[[counterDetection.counters]]"); n != len(countertable.TableDefaults()) {
		t.Errorf("file shows %d counters, the built-in table has %d", n, len(countertable.TableDefaults()))
	}
}

// exampleLine is TOML quoted in the file's prose (indented past "# ").
var exampleLine = regexp.MustCompile(`^(\[\[.*\]\]|[A-Za-z]+ = .*)$`)

// The override, disable and custom-counter examples of seed 10.3, as the
// file quotes them, are accepted and do what their comments say.
func TestDefaultConfig_10_3_ExamplesAreValid(t *testing.T) {
	var b strings.Builder
	for _, line := range strings.Split(read(t), "\n") {
		rest, ok := strings.CutPrefix(line, "#     ")
		if ok && exampleLine.MatchString(rest) {
			b.WriteString(rest + "\n")
		}
	}
	if !strings.Contains(b.String(), "custom_vendor_error") {
		t.Fatalf("no examples found (lines starting with \"#     \"):\n%s", b.String())
	}
	c, err := daemonconfig.Parse(shipped+" (examples)", []byte(b.String()))
	if err != nil {
		t.Fatalf("examples refused: %v\n%s", err, b.String())
	}
	byName := map[string]countertable.Definition{}
	for _, d := range c.Counters {
		byName[d.Name] = d
	}
	if d := byName["symbol_error"]; !d.IsFatal || d.Threshold != 120 || d.VelocityUnit != countertable.UnitHour {
		t.Errorf("symbol_error example: %+v, want fatal 120/hour", d)
	}
	if d := byName["port_xmit_wait"]; d.Enabled {
		t.Errorf("port_xmit_wait example: still enabled")
	}
	if d, ok := byName["custom_vendor_error"]; !ok || d.ThresholdType != countertable.TypeDelta || d.Threshold != 100 {
		t.Errorf("custom_vendor_error example: %+v (present %v)", d, ok)
	}
}
