package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/config"
)

// TestValidate_ValidFiles: what the daemon would accept, with the summary
// an operator checks before a reload.
func TestValidate_ValidFiles(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"empty file is all defaults", "", ": configuration is valid (18 counters enabled, poll every 1s)\n"},
		{"faster poll, one counter off", "pollingInterval = \"250ms\"\n[[counterDetection.counters]]\nname = \"symbol_error\"\nenabled = false\n",
			": configuration is valid (17 counters enabled, poll every 250ms)\n"},
		{"custom counter added", "[[counterDetection.counters]]\nname = \"rx_icrc_encapsulated\"\npath = \"hw_counters/rx_icrc_encapsulated\"\n" +
			"thresholdType = \"delta\"\nthreshold = 10\n", ": configuration is valid (19 counters enabled, poll every 1s)\n"},
		{"counters off", "[counterDetection]\nenabled = false\n", ": configuration is valid (counter detection disabled, poll every 1s)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeConfig(t, c.body)
			out, errs, code := runIn("validate", p)
			if code != exitOK || out != p+c.want || errs != "" {
				t.Errorf("code %d\n got %q\nwant %q\n%s", code, out, p+c.want, errs)
			}
		})
	}
	// The file the package installs must always validate.
	shipped := filepath.Join("..", "..", "packaging", "config", "config.toml")
	if out, errs, code := runIn("validate", shipped); code != exitOK || !strings.Contains(out, "configuration is valid") {
		t.Errorf("shipped config: code %d %s%s", code, out, errs)
	}
}

// TestValidate_InvalidFiles: each mistake is named by file, key and reason
// (DESIGN.md section 6), and exits 1.
func TestValidate_InvalidFiles(t *testing.T) {
	cases := []struct {
		name, body, key string
		want            []string
	}{
		{"misspelt key", "pollingIntervall = \"1s\"\n", "pollingIntervall", []string{"unknown key"}},
		{"not a duration", "pollingInterval = \"fast\"\n", "pollingInterval", []string{"is not a duration"}},
		{"poll out of range", "pollingInterval = \"1ms\"\n", "pollingInterval", []string{"outside 10ms..1h"}},
		{"bad regex", "nicExclusionRegex = \"^mlx5_[\"\n", "nicExclusionRegex", []string{"regex"}},
		{"relative path", "sysfsRoot = \"sys\"\n", "sysfsRoot", []string{"must be an absolute path"}},
		{"TOML syntax", "pollingInterval = \n", "", []string{"line 1"}},
		{"bad threshold type", "[[counterDetection.counters]]\nname = \"symbol_error\"\nthresholdType = \"sometimes\"\n", "counterDetection.counters[0].thresholdType", []string{"sometimes"}},
		{"unknown check", "checks = [\"FooCheck\"]\n", "checks", []string{"unknown check \"FooCheck\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeConfig(t, c.body)
			out, errs, code := runIn("validate", p)
			if code != exitFailed || out != "" || !strings.HasPrefix(errs, "nichealthctl validate: "+p+": "+c.key) {
				t.Errorf("code %d out %q\nstderr %q", code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q: %s", w, errs)
				}
			}
			out, _, code = runIn("validate", "--json", p)
			var v validateJSON
			if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitFailed || v.Valid || v.File != p || v.Key != c.key || v.Error == "" {
				t.Errorf("--json: %v code %d %+v", err, code, v)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "nope.toml")
	if _, errs, code := runIn("validate", missing); code != exitFailed || !strings.Contains(errs, missing+": cannot read") {
		t.Errorf("missing file: code %d %s", code, errs)
	}
}

func TestValidate_JSONAndUsage(t *testing.T) {
	p := writeConfig(t, "pollingInterval = \"2s\"\n")
	out, _, code := runIn("validate", p, "--json")
	var v validateJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitOK || !v.Valid || !v.Exists || v.PollInterval != "2s" || v.CountersEnabled != 18 {
		t.Errorf("--json: %v code %d %+v", err, code, v)
	}
	if _, errs, code := runIn("validate", p, p); code != exitUsage {
		t.Errorf("two files: code %d %s", code, errs)
	}
	if _, _, code := runIn("validate", "--help"); code != exitOK {
		t.Errorf("--help: code %d", code)
	}
}

// The daemon runs on built-in defaults when the default file is absent;
// validate says so instead of calling a missing file valid.
func TestValidate_DefaultFileAbsent(t *testing.T) {
	if _, err := os.Stat(config.DefaultPath); err == nil {
		t.Skip(config.DefaultPath + " exists on this host")
	}
	out, errs, code := runIn("validate")
	if code != exitOK || out != config.DefaultPath+": not present; nichealthd runs with the built-in defaults (18 counters enabled, poll every 1s)\n" {
		t.Errorf("code %d %q %q", code, out, errs)
	}
}
