package config

import (
	"strings"
	"testing"
)

// [mad] helper names the one nichealth-mad both readers run; [farEnd]
// helper, its older spelling, is an alias: accepted alone (the daemon says
// so once), accepted when it agrees, refused when it names another
// helper, with both keys and the fix in the message.
func TestConfig_MADHelperAndItsAlias(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		helper     string
		alias      bool
	}{
		{"neither", "", "", false},
		{"[mad] helper", "[mad]\nhelper = \"/opt/nh/nichealth-mad\"\n", "/opt/nh/nichealth-mad", false},
		{"the alias alone", "[farEnd]\nhelper = \"/opt/old/nichealth-mad\"\n", "/opt/old/nichealth-mad", true},
		{"both agree", "[mad]\nhelper = \"/opt/nh/nichealth-mad\"\n[farEnd]\nhelper = \"/opt/nh/nichealth-mad\"\n", "/opt/nh/nichealth-mad", false},
	} {
		c, err := Parse("c.toml", []byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.MAD.Helper != tc.helper || c.MAD.HelperFromAlias != tc.alias {
			t.Errorf("%s: %+v, want helper %q, from the alias %v", tc.name, c.MAD, tc.helper, tc.alias)
		}
	}
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"both differ", "[mad]\nhelper = \"/opt/nh/nichealth-mad\"\n[farEnd]\nhelper = \"/opt/old/nichealth-mad\"\n",
			[]string{"farEnd.helper", "/opt/old/nichealth-mad", "[mad] helper", "/opt/nh/nichealth-mad", "remove [farEnd] helper"}},
		{"relative", "[mad]\nhelper = \"bin/nichealth-mad\"\n", []string{"mad.helper", "absolute"}},
		{"relative alias", "[farEnd]\nhelper = \"bin/nichealth-mad\"\n", []string{"farEnd.helper", "absolute"}},
		{"unknown key", "[mad]\nhelpr = \"/x\"\n", []string{"mad.helpr", "did you mean helper"}},
	} {
		_, err := Parse("c.toml", []byte(tc.body))
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", tc.name, err, w)
			}
		}
	}
}
