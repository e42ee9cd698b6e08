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
