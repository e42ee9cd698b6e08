package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
)

func TestEmptyFileIsTheDefaults(t *testing.T) {
	c, err := Parse("/etc/nichealthd/config.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Paths.SysfsRoot != "/sys" || c.Paths.ClassInfiniBand != "/sys/class/infiniband" || c.Paths.ClassNet != "/sys/class/net" ||
		c.PollInterval != time.Second || c.ReadTimeout != time.Second || c.MaxStuckReads != 4 ||
		c.TopologySource != "auto" || c.Strategy != event.StrategyExecuteRemediation || len(c.Checks) != 11 ||
		!c.CountersEnabled || c.XmitWaitBytesPerTick != 8 || !c.DBusEnabled || c.AdminGroup != "nichealth-admin" ||
		c.OutboxMaxBytes != 64<<20 || c.ConnectorSocket != "" || c.MetricsAddress != "" || !c.JournalEnabled ||
		c.MetadataPath != "/var/lib/nvsentinel/gpu_metadata.json" || c.ExclusionRaw != DefaultExclusion {
		t.Fatalf("defaults: %+v", c)
	}
	if len(c.Counters) != len(countertable.TableDefaults()) {
		t.Fatalf("counters %d", len(c.Counters))
	}
	if !c.Sanity.Enabled || c.Sanity.ISSM || c.Sanity.Fatal {
		t.Fatalf("sanity defaults %+v", c.Sanity)
	}
}

func TestClassPathsFollowSysfsRoot(t *testing.T) {
	c, err := Parse("f", []byte(`sysfsRoot = "/host/sys"`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Paths.ClassInfiniBand != "/host/sys/class/infiniband" || c.Paths.ClassNet != "/host/sys/class/net" {
		t.Fatalf("%+v", c.Paths)
	}
	c, _ = Parse("f", []byte("sysfsRoot = \"/host/sys\"\nsysClassInfinibandPath = \"/nvsentinel/sys/class/infiniband\""))
	if c.Paths.ClassInfiniBand != "/nvsentinel/sys/class/infiniband" {
		t.Fatalf("override ignored: %+v", c.Paths)
	}
}

// Every refusal names the file, the key and the reason.
func TestValidationNamesFileKeyAndReason(t *testing.T) {
	for _, tc := range []struct {
		doc, key, reason string
	}{
		{`pollingInterval = "fast"`, "pollingInterval", "duration"},
		{`pollingInterval = "1ms"`, "pollingInterval", "outside"},
		{`readTimeout = "2m"`, "readTimeout", "outside"},
		{`maxStuckReads = -1`, "maxStuckReads", "outside"},
		{`topologySource = "guess"`, "topologySource", "auto, metadata, sysfs"},
		{`nicExclusionRegex = "^mlx5_(["`, "nicExclusionRegex", "regex"},
		{`nicInclusionRegexOverride = "("`, "nicInclusionRegexOverride", "regex"},
		{`processingStrategy = "FIX_IT"`, "processingStrategy", "EXECUTE_REMEDIATION"},
		{`checks = ["InfiniBandStateCheck", "MagicCheck"]`, "checks", "MagicCheck"},
		{`metricsAddress = "2112"`, "metricsAddress", "host:port"},
		{`sysfsRoot = "relative/sys"`, "sysfsRoot", "absolute"},
		{`unknownKey = 1`, "unknownKey", "unknown key"},
		{"[sinks.connector]\nsocket = 3", "sinks.connector.socket", ""},
		{"[outbox]\nmaxBytes = 10", "outbox.maxBytes", "minimum"},
		{"[counterDetection]\nxmitWaitBytesPerTick = -8", "counterDetection.xmitWaitBytesPerTick", "positive"},
		{"[[counterDetection.counters]]\nname = \"symbol_error\"\nvelocityUnit = \"day\"", "velocityUnit", "day"},
		{"[[counterDetection.counters]]\nname = \"x\"\npath = \"../../etc/passwd\"\nthresholdType = \"delta\"\nthreshold = 1", "path", ""},
		{"[[counterDetection.counters]]\nname = \"link_downed\"\nthreshold = -1", "threshold", ""},
		{"[[counterDetection.counters]]\nname = \"a\"\n[[counterDetection.counters]]\nname = \"a\"", "name", ""},
	} {
		_, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
		if err == nil {
			t.Errorf("%q accepted", tc.doc)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "/etc/nichealthd/config.toml") || !strings.Contains(msg, tc.key) || !strings.Contains(msg, tc.reason) {
			t.Errorf("%q: message %q lacks file, %q or %q", tc.doc, msg, tc.key, tc.reason)
		}
	}
}

func TestCounterOverridesByName(t *testing.T) {
	c, err := Parse("f", []byte(`
[[counterDetection.counters]]
name = "port_xmit_wait"
enabled = false

[[counterDetection.counters]]
name = "symbol_error"
threshold = 50.0

[[counterDetection.counters]]
name = "custom_vendor_error"
path = "hw_counters/vendor_specific_err"
thresholdType = "delta"
threshold = 100
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]countertable.Definition{}
	for _, d := range c.Counters {
		got[d.Name] = d
	}
	if got["port_xmit_wait"].Enabled || got["symbol_error"].Threshold != 50 || got["symbol_error"].VelocityUnit != "second" ||
		got["custom_vendor_error"].Path != "hw_counters/vendor_specific_err" || !got["custom_vendor_error"].Enabled {
		t.Fatalf("%+v", got)
	}
}

// NVSentinel's own rendered ConfigMap keys are accepted as they are.
func TestNVSentinelKeysAccepted(t *testing.T) {
	doc := `nicExclusionRegex = "^veth.*,^docker.*,^br-.*,^lo$"
nicInclusionRegexOverride = ""
sysClassInfinibandPath = "/nvsentinel/sys/class/infiniband"
sysClassNetPath = "/nvsentinel/sys/class/net"
[counterDetection]
enabled = true
counters = []
`
	if _, err := Parse("f", []byte(doc)); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.toml")
	_, err := Load(p)
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), p) {
		t.Fatalf("missing non-default file: %v", err)
	}
	os.WriteFile(p, []byte("pollingInterval = \"2s\"\n"), 0o644)
	c, err := Load(p)
	if err != nil || c.PollInterval != 2*time.Second {
		t.Fatalf("%v %v", c, err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("pollingInterval = \"1s\"\n[sinks.jsonl]\npath = \"-\"\n"))
	f.Add([]byte("[[counterDetection.counters]]\nname = \"x\"\npath = \"counters/x\"\nthresholdType = \"velocity\"\nthreshold = 1\nvelocityUnit = \"hour\"\n"))
	f.Add([]byte("nicExclusionRegex = \"(\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse("fuzz.toml", b)
		if err == nil && (c.PollInterval <= 0 || c.ReadTimeout <= 0 || c.MaxStuckReads <= 0) {
			t.Fatalf("accepted invalid values: %+v", c)
		}
		if err != nil && !strings.Contains(err.Error(), "fuzz.toml") {
			t.Fatalf("error without the file name: %v", err)
		}
	})
}
