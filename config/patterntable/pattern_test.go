package patterntable

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

func sp(s string) *string { return &s }

// TestKernelLog_11_OverridesByNameAddOrDisable: a default's name changes
// only the keys the entry sets, enabled = false disables it, a new name
// adds a pattern after the defaults.
func TestKernelLog_11_OverridesByNameAddOrDisable(t *testing.T) {
	off := false
	n := 2
	ps, err := Merge(Defaults(), []Override{
		{Name: sp("tx_timeout"), Severity: sp("fatal"), RecommendedAction: sp("COMPONENT_RESET"), Occurrences: &n, Window: Duration{D: time.Minute, Set: true}},
		{Name: sp("access_reg_failed"), Enabled: &off},
		{Name: sp("ib_link_lost"), Regex: sp(`^mlx5_ib: .*link lost`), Severity: sp("non-fatal"), Description: sp("fix the link")},
	})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Pattern{}
	for _, p := range ps {
		by[p.Name] = p
	}
	tx := by["tx_timeout"]
	def := Defaults()
	var want Pattern
	for _, p := range def {
		if p.Name == "tx_timeout" {
			want = p
		}
	}
	if tx.Severity != Fatal || tx.Action != event.ActionComponentReset || tx.Occurrences != 2 || tx.Window != time.Minute ||
		tx.Regex != want.Regex || tx.Description != want.Description || tx.Dedupe != want.Dedupe {
		t.Errorf("overridden default %+v", tx)
	}
	if by["access_reg_failed"].Enabled {
		t.Error("disabled default still enabled")
	}
	added := ps[len(ps)-1]
	if added.Name != "ib_link_lost" || !added.Enabled || added.Scope != ScopeNIC || added.Dedupe != 5*time.Minute || added.Quiet != time.Hour || added.Occurrences != 1 {
		t.Errorf("added pattern %+v", added)
	}
	if len(ps) != len(def)+1 {
		t.Errorf("%d patterns, want %d", len(ps), len(def)+1)
	}
}

// TestKernelLog_11_ValidationNamesEntryAndKey: every refusal names the
// entry and the key, so the configuration error can name file, key and
// line.
func TestKernelLog_11_ValidationNamesEntryAndKey(t *testing.T) {
	zero, big := 0, 20000
	for _, tc := range []struct {
		o       Override
		key     string
		content string
	}{
		{Override{Name: sp("x"), Regex: sp(`mlx5_core (`), Severity: sp("fatal")}, "regex", "does not compile"},
		{Override{Name: sp("x"), Regex: sp(`(?=lookahead)`), Severity: sp("fatal")}, "regex", "RE2"},
		{Override{Name: sp("x"), Severity: sp("fatal")}, "regex", "needs regex and severity"},
		{Override{Name: sp("x"), Regex: sp(`a`), Severity: sp("deadly")}, "severity", "deadly"},
		{Override{Name: sp("tx_timeout"), Scope: sp("rack")}, "scope", "rack"},
		{Override{Name: sp("tx_timeout"), RecommendedAction: sp("PRAY")}, "recommendedAction", "PRAY"},
		{Override{Name: sp("tx_timeout"), DedupeWindow: Duration{D: 0, Set: true}}, "dedupeWindow", "outside"},
		{Override{Name: sp("tx_timeout"), Occurrences: &big}, "occurrences", "outside"},
		{Override{Name: sp("tx_timeout"), Occurrences: &big}, "occurrences", "10000"},
		{Override{Name: sp("tx_timeout"), Occurrences: &zero}, "occurrences", "outside"},
		{Override{Name: sp("tx_timeout"), QuietPeriod: Duration{D: 8 * 24 * time.Hour, Set: true}}, "quietPeriod", "outside"},
		{Override{Name: sp("tx_timeout"), FollowWithin: &big}, "followWithin", "without followedBy"},
		{Override{Name: sp("kernel_log"), Regex: sp("a"), Severity: sp("fatal")}, "name", "reserved"},
		{Override{Name: sp("has space"), Regex: sp("a"), Severity: sp("fatal")}, "name", "letters"},
		{Override{Name: sp("x"), Regex: sp(""), Severity: sp("fatal")}, "regex", "empty"},
		{Override{}, "name", "missing"},
	} {
		_, err := Merge(Defaults(), []Override{{Name: sp("module_error")}, tc.o})
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Index != 1 {
			t.Fatalf("%+v: %v, want a ValidationError of entry 1", tc.o, err)
		}
		if ve.Key != tc.key || !strings.Contains(ve.Error(), tc.content) {
			t.Errorf("%+v: key %q error %q, want key %q containing %q", tc.o, ve.Key, ve.Error(), tc.key, tc.content)
		}
	}
	_, err := Merge(Defaults(), []Override{{Name: sp("tx_timeout")}, {Name: sp("tx_timeout")}})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Index != 1 || ve.Key != "name" {
		t.Errorf("duplicate: %v", err)
	}
}

// Every default compiles, is enabled, cites its source and says how to
// fix what it finds.
func TestKernelLog_11_DefaultsCiteTheirSourceAndFix(t *testing.T) {
	ps, err := Merge(Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Source == "" || p.Description == "" || !p.Enabled {
			t.Errorf("%s: source %q description %q enabled %v", p.Name, p.Source, p.Description, p.Enabled)
		}
		if p.Severity != Informational && !strings.Contains(p.Description, "Fix:") {
			t.Errorf("%s: the description does not say the fix", p.Name)
		}
	}
}

// TestBounded_5_TableCostBudget: a table past 128 patterns, or whose
// enabled regexes add up past 32 KiB, is refused naming the entry that
// crossed the bound (500 patterns were accepted and 3,000 records stalled
// the loop 40 s); disabling patterns makes room.
func TestBounded_5_TableCostBudget(t *testing.T) {
	var many []Override
	for i := 0; i < 500; i++ {
		many = append(many, Override{Name: sp(fmt.Sprintf("p%03d", i)), Regex: sp(fmt.Sprintf("word%03d", i)), Severity: sp("non-fatal")})
	}
	_, err := Merge(Defaults(), many)
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Reason, "more than 128 patterns") || ve.Index != 128-len(Defaults()) {
		t.Fatalf("500 patterns: %v", err)
	}
	if _, err := Merge(Defaults(), many[:128-len(Defaults())]); err != nil {
		t.Fatalf("128 patterns refused: %v", err)
	}
	long := strings.Repeat("x", 1000)
	var big []Override
	for i := 0; i < 40; i++ {
		big = append(big, Override{Name: sp(fmt.Sprintf("b%02d", i)), Regex: sp(long + fmt.Sprint(i)), Severity: sp("non-fatal")})
	}
	if _, err := Merge(Defaults(), big); !errors.As(err, &ve) || !strings.Contains(ve.Reason, "32768 bytes") || ve.Key != "regex" {
		t.Fatalf("40 KiB of regexes: %v", err)
	}
	off := false
	for i := range big[:20] {
		big[i].Enabled = &off
	}
	if _, err := Merge(Defaults(), big); err != nil {
		t.Fatalf("with 20 disabled: %v", err)
	}
}
