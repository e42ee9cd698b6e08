package config

import (
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// MADFile is the [mad] table: what the node's InfiniBand
// management-datagram side shares. Both MAD readers (the far end,
// [farEnd]; this host's share of the fabric, [fabric]) run nichealth-mad,
// each its own process, so the helper's path is said once, here.
type MADFile struct {
	Helper string `toml:"helper"`
}

// MADConfig is [mad] with its alias folded in.
type MADConfig struct {
	// Helper is nichealth-mad's path; "" finds it beside the daemon
	// (../libexec/nichealthd/, then the daemon's own directory).
	Helper string
	// HelperFromAlias says Helper was set by [farEnd] helper alone, the
	// key's older spelling: the daemon says once that it is an alias.
	HelperFromAlias bool
}

// madFrom reads [mad]. [farEnd] helper, where the path was set before
// both readers shared it, stays accepted as an alias: a file written for
// an earlier release keeps working. Both set to different paths is
// refused, since one of them would be silently ignored.
func madFrom(c *Config, f *File, bad badFunc) error {
	h, alias := f.MAD.Helper, f.FarEnd.Helper
	for _, kv := range [][2]string{{"mad.helper", h}, {"farEnd.helper", alias}} {
		if p := kv[1]; p != "" && (!filepath.IsAbs(p) || !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0) {
			return bad(kv[0], "%q must be an absolute path (leave it out to use the installed nichealth-mad)", p)
		}
	}
	if h != "" && alias != "" && h != alias {
		return bad("farEnd.helper", "%q differs from [mad] helper %q: both readers run the one nichealth-mad named by [mad] helper, of which [farEnd] helper is an older alias; remove [farEnd] helper", alias, h)
	}
	c.MAD = MADConfig{Helper: h, HelperFromAlias: h == "" && alias != ""}
	if c.MAD.HelperFromAlias {
		c.MAD.Helper = alias
	}
	return nil
}
