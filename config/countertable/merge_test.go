package countertable

import (
	"errors"
	"math"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

func sp(s string) *string   { return &s }
func bp(b bool) *bool       { return &b }
func fp(f float64) *float64 { return &f }
func find(defs []Definition, name string) *Definition {
	for i := range defs {
		if defs[i].Name == name {
			return &defs[i]
		}
	}
	return nil
}

// TestCounters_10_3_Overrides walks the seed's custom-counter example.
func TestCounters_10_3_Overrides(t *testing.T) {
	got, err := Merge(Defaults(), []Override{
		{Name: sp("symbol_error"), Path: sp("counters/symbol_error"), Enabled: bp(true), IsFatal: bp(true),
			ThresholdType: sp("velocity"), Threshold: fp(120), VelocityUnit: sp("hour"), Description: sp("Symbol errors exceed IBTA BER threshold")},
		{Name: sp("custom_vendor_error"), Path: sp("hw_counters/vendor_specific_err"), Enabled: bp(true), IsFatal: bp(false),
			ThresholdType: sp("delta"), Threshold: fp(100), Description: sp("Vendor-specific error counter")},
		{Name: sp("port_xmit_wait"), Enabled: bp(false)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(Defaults())+1 {
		t.Fatalf("got %d definitions", len(got))
	}
	se := find(got, "symbol_error")
	if !se.IsFatal || se.Threshold != 120 || se.VelocityUnit != UnitHour || se.Description != "Symbol errors exceed IBTA BER threshold" {
		t.Errorf("symbol_error not overridden: %+v", se)
	}
	if xw := find(got, "port_xmit_wait"); xw.Enabled || xw.Threshold != 10 || xw.ThresholdType != TypeCongestion || xw.Path != "counters/port_xmit_wait" {
		t.Errorf("port_xmit_wait: only enabled should change: %+v", xw)
	}
	cv := got[len(got)-1]
	want := Definition{Name: "custom_vendor_error", Path: "hw_counters/vendor_specific_err", Enabled: true,
		ThresholdType: TypeDelta, Threshold: 100, Description: "Vendor-specific error counter"}
	if cv != want {
		t.Errorf("custom counter:\n got %+v\nwant %+v", cv, want)
	}
	// Only the keys an entry sets change.
	got2, err := Merge(Defaults(), []Override{{Name: sp("link_error_recovery"), Threshold: fp(7)}})
	if err != nil {
		t.Fatal(err)
	}
	ler := *find(got2, "link_error_recovery")
	wantLER := *find(Defaults(), "link_error_recovery")
	wantLER.Threshold = 7
	if ler != wantLER {
		t.Errorf("partial override:\n got %+v\nwant %+v", ler, wantLER)
	}
	// Empty overrides: the defaults unchanged.
	got3, err := Merge(Defaults(), nil)
	if err != nil || len(got3) != len(Defaults()) {
		t.Fatalf("Merge(nil) = %d, %v", len(got3), err)
	}
}

// TestCounters_10_5_Validation proves every rejection rule and the message
// that names entry, counter, key and reason.
func TestCounters_10_5_Validation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       []Override
		key     string
		message string
	}{
		{"negative threshold", []Override{{Name: sp("symbol_error"), Threshold: fp(-1)}},
			"threshold", `counterDetection.counters[0] (name "symbol_error"): threshold -1 is negative; it must be >= 0`},
		{"NaN threshold", []Override{{Name: sp("symbol_error"), Threshold: fp(math.NaN())}},
			"threshold", `threshold NaN is not a finite number`},
		{"infinite threshold", []Override{{Name: sp("symbol_error"), Threshold: fp(math.Inf(1))}},
			"threshold", `threshold +Inf is not a finite number`},
		{"bad unit", []Override{{Name: sp("link_downed")}, {Name: sp("link_downed_x"), Path: sp("counters/link_downed"), ThresholdType: sp("velocity"), Threshold: fp(1), VelocityUnit: sp("day")}, {}, {Name: sp("foo"), Path: sp("counters/foo"), ThresholdType: sp("velocity"), Threshold: fp(1), VelocityUnit: sp("day")}},
			"velocityUnit", `counterDetection.counters[3] (name "foo"): velocityUnit "day" is not one of second, minute, hour`},
		{"bad unit on delta", []Override{{Name: sp("link_downed"), VelocityUnit: sp("fortnight")}},
			"velocityUnit", `velocityUnit "fortnight" is not one of second, minute, hour`},
		{"velocity without unit", []Override{{Name: sp("link_downed"), ThresholdType: sp("velocity")}},
			"velocityUnit", `velocityUnit is required for a velocity threshold`},
		{"bad type", []Override{{Name: sp("symbol_error"), ThresholdType: sp("rate")}},
			"thresholdType", `thresholdType "rate" is not one of delta, velocity`},
		{"duplicate name", []Override{{Name: sp("symbol_error"), Threshold: fp(5)}, {Name: sp("symbol_error"), Threshold: fp(6)}},
			"name", `counterDetection.counters[1] (name "symbol_error"): name duplicates counterDetection.counters[0]`},
		{"missing name", []Override{{Threshold: fp(5)}},
			"name", `counterDetection.counters[0]: name is required`},
		{"bad name", []Override{{Name: sp("a:b"), Path: sp("counters/x"), ThresholdType: sp("delta"), Threshold: fp(0)}},
			"name", `may contain only letters`},
		{"custom without path", []Override{{Name: sp("x"), ThresholdType: sp("delta"), Threshold: fp(0)}},
			"path", `path is required for a counter that is not one of the defaults`},
		{"custom without type", []Override{{Name: sp("x"), Path: sp("counters/x"), Threshold: fp(0)}},
			"thresholdType", `thresholdType is required`},
		{"custom without threshold", []Override{{Name: sp("x"), Path: sp("counters/x"), ThresholdType: sp("delta")}},
			"threshold", `threshold is required`},
		{"custom velocity without unit", []Override{{Name: sp("x"), Path: sp("counters/x"), ThresholdType: sp("velocity"), Threshold: fp(1)}},
			"velocityUnit", `velocityUnit is required`},
		{"path escapes", []Override{{Name: sp("symbol_error"), Path: sp("../../../../etc/shadow")}},
			"path", `must be a clean relative path inside the port directory`},
		{"path absolute", []Override{{Name: sp("symbol_error"), Path: sp("/etc/shadow")}},
			"path", `must be relative to the port directory`},
		{"path dotdot inside", []Override{{Name: sp("symbol_error"), Path: sp("counters/../../x")}},
			"path", `without '..'`},
		{"path unclean", []Override{{Name: sp("symbol_error"), Path: sp("counters//symbol_error")}},
			"path", `clean relative path`},
		{"path is the port directory", []Override{{Name: sp("symbol_error"), Path: sp(".")}},
			"path", `clean relative path`},
		{"path empty", []Override{{Name: sp("symbol_error"), Path: sp("")}},
			"path", `is empty`},
		{"netdev escapes", []Override{{Name: sp("carrier_changes"), Path: sp("/sys/class/net/{interface}/../../../etc/shadow")}},
			"path", `must name one file directly under`},
		{"netdev elsewhere", []Override{{Name: sp("carrier_changes"), Path: sp("/proc/{interface}/x")}},
			"path", `must be relative to the port directory`},
		{"placeholder in relative path", []Override{{Name: sp("symbol_error"), Path: sp("counters/{interface}")}},
			"path", `must be relative`},
		{"netdev deep", []Override{{Name: sp("carrier_changes"), Path: sp("/sys/class/net/{interface}/device/x")}},
			"path", `must name one file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Merge(Defaults(), tc.o)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *ValidationError", err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not contain %q", err, tc.message)
			}
			found := false
			for _, e := range unjoin(err) {
				if errors.As(e, &ve) && ve.Key == tc.key {
					found = true
				}
			}
			if !found {
				t.Errorf("no ValidationError with key %q in %v", tc.key, err)
			}
		})
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestCounters_10_5_ValidPaths(t *testing.T) {
	for _, p := range []string{
		"counters/symbol_error", "hw_counters/rnr_nak_retry_err", "counters/VL15_dropped",
		"/sys/class/net/{interface}/carrier_changes", "/sys/class/net/{interface}/statistics/rx_crc_errors",
	} {
		if r := pathProblem(p); r != "" {
			t.Errorf("%q rejected: %s", p, r)
		}
	}
}

func TestCounters_10_5_AllErrorsReported(t *testing.T) {
	_, err := Merge(Defaults(), []Override{
		{Name: sp("symbol_error"), Threshold: fp(-1)},
		{Name: sp("link_downed"), ThresholdType: sp("bogus")},
	})
	if n := len(unjoin(err)); n != 2 {
		t.Fatalf("want 2 joined errors, got %d: %v", n, err)
	}
}

// TestCounters_DESIGN1_SeedCarrierPathRewritten: a configuration copied from
// the seed would otherwise watch a file Linux does not have.
func TestCounters_DESIGN1_SeedCarrierPathRewritten(t *testing.T) {
	got, err := Merge(Defaults(), []Override{{Name: sp("carrier_changes"), Path: sp("/sys/class/net/{interface}/statistics/carrier_changes")}})
	if err != nil {
		t.Fatal(err)
	}
	if p := find(got, "carrier_changes").Path; p != "/sys/class/net/{interface}/carrier_changes" {
		t.Fatalf("path = %q", p)
	}
}

// TestCounters_10_1_TOMLKeys decodes NVSentinel's key names from TOML.
func TestCounters_10_1_TOMLKeys(t *testing.T) {
	const doc = `
[counterDetection]
[[counterDetection.counters]]
name = "symbol_error"
isFatal = true
thresholdType = "velocity"
threshold = 120
velocityUnit = "hour"
description = "strict"

[[counterDetection.counters]]
name = "port_xmit_wait"
enabled = false

[[counterDetection.counters]]
name = "custom_vendor_error"
path = "hw_counters/vendor_specific_err"
thresholdType = "delta"
threshold = 100
`
	var cfg struct {
		CounterDetection struct {
			Counters []Override `toml:"counters"`
		} `toml:"counterDetection"`
	}
	if err := toml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	got, err := Merge(Defaults(), cfg.CounterDetection.Counters)
	if err != nil {
		t.Fatal(err)
	}
	if se := find(got, "symbol_error"); !se.IsFatal || se.Threshold != 120 || se.VelocityUnit != "hour" || se.Description != "strict" {
		t.Errorf("symbol_error = %+v", se)
	}
	if find(got, "port_xmit_wait").Enabled {
		t.Error("port_xmit_wait still enabled")
	}
	if c := find(got, "custom_vendor_error"); c == nil || c.Threshold != 100 || !c.Enabled {
		t.Errorf("custom = %+v", c)
	}
}

func TestCounters_10_5_ValidateDuplicates(t *testing.T) {
	defs := append(Defaults(), Defaults()[0])
	if err := Validate(defs); err == nil || !strings.Contains(err.Error(), "more than one counter") {
		t.Fatalf("Validate = %v", err)
	}
}

// TestCounters_10_5_NameLengthLimit: 128 characters is the longest name.
func TestCounters_10_5_NameLengthLimit(t *testing.T) {
	if p := nameProblem(strings.Repeat("a", 128)); p != "" {
		t.Fatalf("128 characters refused: %s", p)
	}
	if p := nameProblem(strings.Repeat("a", 129)); p == "" {
		t.Fatal("129 characters accepted")
	}
}
