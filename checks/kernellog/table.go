package kernellog

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/nichealth/nichealthd/config/patterntable"

	"github.com/nichealth/nichealthd/event"
)

// CheckName is the check name kernel-log events carry: a check of its own,
// so NVSentinel keeps its conditions apart from the state and counter
// checks' (DESIGN.md difference 2 and 13).
const CheckName = event.KernelLogCheck

// compiled is a pattern with its regexes.
type compiled struct {
	*patterntable.Pattern
	re, follow, clear  *regexp.Regexp
	pciGroup, devGroup int
	// must are literals one of which every match contains, tested first:
	// most records fail them, and a substring search costs a fraction of
	// running the regex (with its leading .*) over the line.
	must []string
}

// requiredLiterals returns literals one of which every match of expr
// contains (nil when it cannot tell): a literal element of a
// concatenation, or one per branch of an alternation. Of several
// candidates it keeps the one whose shortest literal is longest.
func requiredLiterals(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	return required(re.Simplify())
}

func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			r := required(sub)
			if r == nil {
				return nil
			}
			out = append(out, r...)
		}
		return out
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if r := required(sub); r != nil && score(r) > score(best) {
				best = r
			}
		}
		return best
	}
	return nil
}

func score(lits []string) int {
	if len(lits) == 0 {
		return 0
	}
	m := len(lits[0])
	for _, l := range lits[1:] {
		m = min(m, len(l))
	}
	return m
}

// matches reports whether the pattern's regex matches s (with the
// submatch indexes when it names the function by a group).
func (c *compiled) matches(s string) (bool, []int) {
	if len(c.must) > 0 && !containsAny(s, c.must) {
		return false, nil
	}
	if c.pciGroup < 0 && c.devGroup < 0 {
		return c.re.MatchString(s), nil
	}
	m := c.re.FindStringSubmatchIndex(s)
	return m != nil, m
}

// Table is the compiled patterns, in judging order.
type Table struct {
	patterns []compiled
	byName   map[string]*compiled
	// clearing are the patterns with a clear regex.
	clearing []*compiled
}

// Compile compiles validated patterns (Merge's result).
func Compile(ps []patterntable.Pattern) (*Table, error) {
	t := &Table{byName: map[string]*compiled{}}
	for i := range ps {
		p := ps[i]
		c := compiled{Pattern: &p, pciGroup: -1, devGroup: -1}
		var err error
		if c.re, err = regexp.Compile(p.Regex); err != nil {
			return nil, fmt.Errorf("pattern %s: regex: %w", p.Name, err)
		}
		if p.FollowedBy != "" {
			if c.follow, err = regexp.Compile(p.FollowedBy); err != nil {
				return nil, fmt.Errorf("pattern %s: followedBy: %w", p.Name, err)
			}
		}
		if p.ClearRegex != "" {
			if c.clear, err = regexp.Compile(p.ClearRegex); err != nil {
				return nil, fmt.Errorf("pattern %s: clearRegex: %w", p.Name, err)
			}
		}
		c.pciGroup, c.devGroup = c.re.SubexpIndex("pci"), c.re.SubexpIndex("dev")
		c.must = requiredLiterals(p.Regex)
		t.patterns = append(t.patterns, c)
	}
	for i := range t.patterns {
		t.byName[t.patterns[i].Name] = &t.patterns[i]
		if t.patterns[i].clear != nil {
			t.clearing = append(t.clearing, &t.patterns[i])
		}
	}
	return t, nil
}

// Pattern returns the pattern called name, or nil.
func (t *Table) Pattern(name string) *patterntable.Pattern {
	if c := t.byName[name]; c != nil {
		return c.Pattern
	}
	return nil
}

// Patterns returns the table in judging order.
func (t *Table) Patterns() []patterntable.Pattern {
	out := make([]patterntable.Pattern, len(t.patterns))
	for i := range t.patterns {
		out[i] = *t.patterns[i].Pattern
	}
	return out
}

func containsAny(s string, lits []string) bool {
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}
