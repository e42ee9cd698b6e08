package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigErrorsThatTeach (issue 40 row 11): every refusal a new user
// meets names the key as written (with the entry's index), its line, what
// was written and what the key expects, in the operator's words, never
// the decoder's Go types.
func TestConfigErrorsThatTeach(t *testing.T) {
	missingMap := filepath.Join(t.TempDir(), "ib-node-name-map")
	for _, tc := range []struct {
		name, doc, key string
		line           int
		want           []string
	}{
		{"MetricsPortTooHigh", `metricsAddress = "127.0.0.1:99999"`, "metricsAddress", 1, []string{`"127.0.0.1:99999"`, "1..65535", `"127.0.0.1:2112"`}},
		{"MetricsPortNegative", "# metrics\nmetricsAddress = \":-1\"", "metricsAddress", 2, []string{"1..65535"}},
		{"MetricsPortName", `metricsAddress = "127.0.0.1:prom"`, "metricsAddress", 1, []string{`port "prom"`}},
		{"MetricsNoPort", `metricsAddress = "2112"`, "metricsAddress", 1, []string{"host:port", `":2112"`}},
		{"PollingZero", "readTimeout = \"1s\"\npollingInterval = \"0s\"", "pollingInterval", 2, []string{"0s is outside 10ms..1h", "default 1s"}},
		{"ReadTimeoutZero", `readTimeout = "0s"`, "readTimeout", 1, []string{"0s is outside 1ms..1m"}},
		{"ParkReprobeZero", `parkReprobeInterval = "0s"`, "parkReprobeInterval", 1, []string{"0s is outside"}},
		{"ConnectorTimeoutZero", "[sinks.connector]\ntimeout = \"0s\"", "sinks.connector.timeout", 2, []string{"0s is outside"}},
		{"FarEndIntervalZero", "[farEnd]\ninterval = \"0s\"", "farEnd.interval", 2, []string{"0s must be 1s..1h"}},
		{"FabricIntervalZero", "[fabric]\ninterval = \"0s\"", "fabric.interval", 2, []string{"0s must be 10s..1h"}},
		{"MaxStuckReadsZero", "maxStuckReads = 0", "maxStuckReads", 1, []string{"0 is outside 1..1024", "default 4"}},
		{"OutboxZero", "[outbox]\nmaxBytes = 0", "outbox.maxBytes", 2, []string{"0 is below the minimum of 65536", "default"}},
		{"FlapEpisodesZero", "[rules.flap]\nepisodes = 0", "rules.flap.episodes", 2, []string{"1..1000"}},
		{"DegradationEventsZero", "[rules.degradation]\nevents = 0", "rules.degradation.events", 2, []string{"1..1000"}},
		{"FlapWindowZero", "[rules.flap]\nwindow = \"0s\"", "rules.flap.window", 2, []string{"1s..24h"}},
		{"ThresholdWord", "[[counterDetection.counters]]\nname = \"symbol_error\"\nthreshold = 10\n\n[[counterDetection.counters]]\nname = \"link_downed\"\nthreshold = \"ten\"\n",
			"counterDetection.counters[1].threshold", 7, []string{`"ten" is not a number`, "threshold = 10"}},
		{"MaxStuckReadsWord", "\nmaxStuckReads = \"x\" # four", "maxStuckReads", 2, []string{`"x" is not a whole number`, "maxStuckReads = 4"}},
		{"BoolQuoted", "[sinks.journal]\nenabled = \"yes\"", "sinks.journal.enabled", 2, []string{`"yes" is not true or false`}},
		{"ChecksNotAList", `checks = "InfiniBandStateCheck"`, "checks", 1, []string{"is not a list", `checks = ["a", "b"]`}},
		{"DurationUnquoted", "[farEnd]\ntimeout = \"5\"", "farEnd.timeout", 2, []string{`"5" is not a duration`, `timeout = "1s"`}},
		{"UnknownKeyTypo", "\npollingInteval = \"1s\"", "pollingInteval", 2, []string{"unknown key", "did you mean pollingInterval"}},
		{"UnknownKeyInTable", "[farEnd]\nintervall = \"1m\"", "farEnd.intervall", 2, []string{"did you mean interval"}},
		{"UnknownKeyInArray", "[[counterDetection.counters]]\nname = \"link_downed\"\n[[counterDetection.counters]]\nname = \"symbol_error\"\ntreshold = 3",
			"counterDetection.counters[1].treshold", 5, []string{"did you mean threshold"}},
		{"UnknownCounter", "[[counterDetection.counters]]\nname = \"symbol_eror\"\nthreshold = 10", "counterDetection.counters[0].name", 2,
			[]string{`"symbol_eror" is an unknown counter`, "did you mean symbol_error"}},
		{"UnknownCounterSecondEntry", "[[counterDetection.counters]]\nname = \"link_downed\"\nenabled = false\n[[counterDetection.counters]]\nname = \"port_rcv_erors\"\nisFatal = true",
			"counterDetection.counters[1].name", 5, []string{"did you mean port_rcv_errors"}},
		{"NodeNameMapMissing", "[farEnd]\nnodeNameMap = \"" + missingMap + "\"", "farEnd.nodeNameMap", 2, []string{missingMap + " does not exist", `nodeNameMap = ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("%q accepted", tc.doc)
			}
			msg := err.Error()
			prefix := fmt.Sprintf("/etc/nichealthd/config.toml: %s: line %d: ", tc.key, tc.line)
			if !strings.HasPrefix(msg, prefix) {
				t.Fatalf("message %q\nwant prefix %q", msg, prefix)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			for _, never := range []string{"struct field", "countertable.", "config.File", "float64", "path is required", "toml:"} {
				if strings.Contains(msg[len(prefix):], never) {
					t.Errorf("message %q speaks the decoder's words %q", msg, never)
				}
			}
		})
	}
}

// TestConfigValuesThatAreMeant: what the refusals above must not catch.
func TestConfigValuesThatAreMeant(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "map")
	if err := os.WriteFile(m, []byte("0x1 \"leaf1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		check     func(*Config) bool
	}{
		{"MetricsAllAddresses", `metricsAddress = ":2112"`, func(c *Config) bool { return c.MetricsAddress == ":2112" }},
		{"MetricsIPv6", `metricsAddress = "[::1]:65535"`, func(c *Config) bool { return c.MetricsAddress == "[::1]:65535" }},
		{"MetricsFreePort", `metricsAddress = "127.0.0.1:0"`, func(c *Config) bool { return c.MetricsAddress == "127.0.0.1:0" }},
		{"MetricsHostName", `metricsAddress = "localhost:1"`, func(c *Config) bool { return c.MetricsAddress == "localhost:1" }},
		{"PollingAbsentIsOneSecond", `readTimeout = "500ms"`, func(c *Config) bool { return c.PollInterval == time.Second && c.ReadTimeout == 500*time.Millisecond }},
		{"PollingWritten", `pollingInterval = "250ms"`, func(c *Config) bool { return c.PollInterval == 250*time.Millisecond }},
		// Zero where zero means something is kept, not replaced by the default.
		{"BatchZeroSendsAtOnce", "[sinks.connector]\nbatchInterval = \"0s\"", func(c *Config) bool { return c.ConnectorBatch == 0 }},
		{"BatchAbsent", "", func(c *Config) bool { return c.ConnectorBatch == time.Second && c.ConnectorTimeout == 5*time.Second }},
		{"StabilizationZero", "[rules.flap]\nstabilization = \"0s\"", func(c *Config) bool { return c.Rules.Flap.Stabilization == 0 }},
		{"ExpectedPortsHoldZero", "[inventory]\nexpectedPortsHold = \"0s\"", func(c *Config) bool { return c.Inventory.Hold == 0 }},
		{"NodeNameMapPresent", "[farEnd]\nnodeNameMap = \"" + m + "\"", func(c *Config) bool { return c.FarEnd.NodeNameMap == m && !c.FarEnd.NodeNameMapOptional }},
		{"NodeNameMapNone", "[farEnd]\nnodeNameMap = \"\"", func(c *Config) bool { return c.FarEnd.NodeNameMap == "" }},
		// The default path spelled out stays optional: used when present.
		{"NodeNameMapDefault", "[farEnd]\nnodeNameMap = \"" + DefaultNodeNameMap + "\"", func(c *Config) bool { return c.FarEnd.NodeNameMapOptional }},
		{"CustomCounterWithPath", "[[counterDetection.counters]]\nname = \"symbol_errors_custom\"\npath = \"counters/symbol_error\"\nthresholdType = \"delta\"\nthreshold = 1",
			func(c *Config) bool { return c.Counters[len(c.Counters)-1].Name == "symbol_errors_custom" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("c.toml", []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("%q: %+v", tc.doc, c)
			}
		})
	}
}
