package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func farEndCodes(c *Config) []string {
	var out []string
	for _, r := range c.FarEnd.Rows {
		out = append(out, r.Field+"="+r.Code())
	}
	return out
}

// DESIGN.md section 13: the far end is read every 60 s by default and
// judged with the seed's thresholds for the same counters, never fatal;
// the slides' suppressed counters (PortRcvErrors, PortXmitDiscards,
// PortXmitWait, VL15Dropped, PortRcvSwitchRelayErrors) are off by default.
func TestDesign_13_FarEndDefaults(t *testing.T) {
	c, err := Parse("c.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := c.FarEnd
	if !f.Enabled || f.Interval != 60*time.Second || f.Timeout != 2*time.Second || c.MAD.Helper != "" ||
		f.NodeNameMap != "/etc/rdma/ib-node-name-map" || !f.NodeNameMapOptional {
		t.Fatalf("defaults %+v", f)
	}
	want := []string{
		"SymbolErrorCounter=peer:symbol_error", "SymbolErrorCounter=peer:symbol_error_fatal",
		"LinkErrorRecoveryCounter=peer:link_error_recovery", "LinkDownedCounter=peer:link_downed",
		"PortRcvRemotePhysicalErrors=peer:port_rcv_remote_physical_errors",
		"PortXmitConstraintErrors=peer:port_xmit_constraint_errors", "PortRcvConstraintErrors=peer:port_rcv_constraint_errors",
		"LocalLinkIntegrityErrors=peer:local_link_integrity_errors", "ExcessiveBufferOverrunErrors=peer:excessive_buffer_overrun_errors",
	}
	if got := farEndCodes(c); !slices.Equal(got, want) {
		t.Fatalf("judged by default:\n got %v\nwant %v", got, want)
	}
	for _, r := range f.Rows {
		if r.Def.IsFatal {
			t.Errorf("%s is fatal on the far end", r.Def.Name)
		}
		switch r.Def.Name {
		case "symbol_error":
			if r.Def.ThresholdType != "velocity" || r.Def.Threshold != 10 || r.Def.VelocityUnit != "second" {
				t.Errorf("symbol_error: %+v, want the seed's 10/second", r.Def)
			}
		case "symbol_error_fatal":
			if r.Def.Threshold != 120 || r.Def.VelocityUnit != "hour" {
				t.Errorf("symbol_error_fatal: %+v, want the seed's 120/hour", r.Def)
			}
		case "link_error_recovery":
			if r.Def.Threshold != 5 || r.Def.VelocityUnit != "minute" {
				t.Errorf("link_error_recovery: %+v, want the seed's 5/minute", r.Def)
			}
		case "link_downed":
			if r.Def.ThresholdType != "delta" || r.Def.Threshold != 0 {
				t.Errorf("link_downed: %+v, want the seed's delta > 0", r.Def)
			}
		}
	}
}

// The suppressed counters switch on by name, the judged ones off; a
// counter table override reaches the far end; a row disabled in the
// table is judged on neither end.
func TestDesign_13_FarEndSwitchesAndTheCounterTable(t *testing.T) {
	c, err := Parse("c.toml", []byte(`
[farEnd.counters]
PortXmitDiscards = true
VL15Dropped = true
LinkDownedCounter = false

[[counterDetection.counters]]
name = "port_xmit_discards"
threshold = 5.0

[[counterDetection.counters]]
name = "symbol_error_fatal"
enabled = false
`))
	if err != nil {
		t.Fatal(err)
	}
	got := farEndCodes(c)
	for _, w := range []string{"PortXmitDiscards=peer:port_xmit_discards", "VL15Dropped=peer:VL15_dropped"} {
		if !slices.Contains(got, w) {
			t.Errorf("%s not judged: %v", w, got)
		}
	}
	for _, nw := range []string{"LinkDownedCounter=peer:link_downed", "SymbolErrorCounter=peer:symbol_error_fatal"} {
		if slices.Contains(got, nw) {
			t.Errorf("%s judged: %v", nw, got)
		}
	}
	for _, r := range c.FarEnd.Rows {
		if r.Def.Name == "port_xmit_discards" && r.Def.Threshold != 5 {
			t.Errorf("port_xmit_discards far end threshold %v, want the table's override 5", r.Def.Threshold)
		}
	}
}

func TestConfig_FarEndRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, key, want string }{
		{"[farEnd]\ninterval = \"500ms\"\n", "farEnd.interval", "1s..1h"},
		{"[farEnd]\ninterval = 60\n", "farEnd.interval", "duration"},
		{"[farEnd]\ntimeout = \"5ms\"\n", "farEnd.timeout", "10ms..1m"},
		{"[farEnd]\ninterval = \"2s\"\ntimeout = \"2s\"\n", "farEnd.timeout", "shorter than farEnd.interval"},
		{"[farEnd]\nhelper = \"bin/nichealth-mad\"\n", "farEnd.helper", "absolute"},
		{"[farEnd]\nnodeNameMap = \"maps/ib\"\n", "farEnd.nodeNameMap", "absolute"},
		{"[farEnd]\nnodeNameMap = \"" + dir + "\"\n", "farEnd.nodeNameMap", "not a regular file"},
		{"[farEnd.counters]\nSymbolErrors = true\n", "farEnd.counters", "not a PortCounters error field"},
		{"[farEnd.counters]\nPortXmitData = true\n", "farEnd.counters", "SymbolErrorCounter"},
		{"[farEnd]\nrate = 1\n", "farEnd.rate", "unknown key"},
	} {
		_, err := Parse("c.toml", []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s and %q", tc.body, err, tc.key, tc.want)
		}
	}
	m := filepath.Join(dir, "map")
	if err := os.WriteFile(m, []byte("0x1 \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Parse("c.toml", []byte("[farEnd]\nnodeNameMap = \""+m+"\"\ninterval = \"1s\"\ntimeout = \"500ms\"\nenabled = false\n"))
	if err != nil || c.FarEnd.NodeNameMap != m || c.FarEnd.NodeNameMapOptional || c.FarEnd.Enabled || c.FarEnd.Interval != time.Second {
		t.Fatalf("%+v %v", c.FarEnd, err)
	}
	c, err = Parse("c.toml", []byte("[farEnd]\nnodeNameMap = \"\"\n"))
	if err != nil || c.FarEnd.NodeNameMap != "" {
		t.Fatalf("no map: %+v %v", c.FarEnd, err)
	}
}
