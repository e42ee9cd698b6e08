package flagdoc

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestPrintOptions_DoubleDashAndDefaults(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("json", false, "machine-readable output")
	fs.String("config", "/etc/nichealthd/config.toml", "TOML `FILE`")
	fs.Duration("timeout", 5*time.Minute, "how long to wait")
	fs.String("bus-address", "", "D-Bus address")
	var b strings.Builder
	PrintOptions(&b, fs)
	want := `  --bus-address string
    	D-Bus address
  --config FILE
    	TOML FILE (default "/etc/nichealthd/config.toml")
  --json
    	machine-readable output
  --timeout duration
    	how long to wait (default 5m0s)
`
	if got := b.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
			t.Errorf("single-dash option line %q", line)
		}
	}
}

// A duration without a unit is named with its flag and the fix; a good one
// is taken, and the option reads as flag.Duration's does.
func TestDuration_UnitlessValueSaysWhatToWrite(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	d := Duration(fs, "timeout", 5*time.Minute, "how long to wait")
	err := fs.Parse([]string{"--timeout", "5"})
	if err == nil || !strings.Contains(err.Error(), "--timeout 5: a duration needs a unit, e.g. 5s") {
		t.Errorf("--timeout 5: %v", err)
	}
	err = fs.Parse([]string{"--timeout", "soon"})
	if err == nil || !strings.Contains(err.Error(), "--timeout soon: not a duration; write a number and a unit, e.g. 30s") {
		t.Errorf("--timeout soon: %v", err)
	}
	if err := fs.Parse([]string{"--timeout", "90s"}); err != nil || *d != 90*time.Second {
		t.Errorf("--timeout 90s: %v, %v", err, *d)
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	Duration(fs, "timeout", 5*time.Minute, "how long to wait")
	var b strings.Builder
	PrintOptions(&b, fs)
	if want := "  --timeout duration\n    \thow long to wait (default 5m0s)\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
