package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
)

// FarEndFile is the [farEnd] table: the switch port at the other end of
// each InfiniBand cable, read by MAD through nichealth-mad (DESIGN.md
// section 13).
type FarEndFile struct {
	Enabled  *bool    `toml:"enabled"`
	Interval Duration `toml:"interval"`
	Timeout  Duration `toml:"timeout"`
	// Helper is [mad] helper's older spelling, still accepted (madFrom).
	Helper string `toml:"helper"`
	// NodeNameMap is nil when the key is absent (the default map when
	// present), "" to name peers by their NodeDescription alone.
	NodeNameMap *string `toml:"nodeNameMap"`
	// Counters switches far-end fields on or off by their PMA name.
	Counters map[string]bool `toml:"counters"`
}

// FarEndConfig is [farEnd] with defaults applied.
type FarEndConfig struct {
	Enabled bool
	// Interval is how often every peer's counters are read and every
	// peer is discovered again (a port state change rediscovers at once).
	Interval time.Duration
	// Timeout bounds one request to the helper (all its MADs).
	Timeout time.Duration
	// NodeNameMap is the infiniband-diags node-name map ("" none);
	// NodeNameMapOptional says it is the default, used only when present.
	NodeNameMap         string
	NodeNameMapOptional bool
	// Judge are the fields switched on or off ([farEnd.counters]); Rows
	// the judged rows they resolve to against the counter table.
	Judge map[string]bool
	Rows  []countertable.FarEndRow
}

// FarEndOn says whether the far end is read and judged: [farEnd] enabled
// and InfiniBandFarEndCheck selected (checks). The daemon starts the
// reader, the check judges and the opening clears name the check on this
// one answer, so they never disagree.
func (c *Config) FarEndOn() bool {
	return c.FarEnd.Enabled && c.Checks[event.FarEndCheck]
}

// The [farEnd] defaults and why:
//   - interval 60s: the far end is one cable's evidence, not the 1 s
//     counter tick; a minute is the link sanity pass's cadence, and what
//     the node sends stays far below a fabric sweep (README "Cost").
//   - timeout 2s: a management processor answers an SMP in milliseconds;
//     a busy one, or a subnet manager sweep, in hundreds.
//   - nodeNameMap /etc/rdma/ib-node-name-map: where rdma-core's tools
//     (ibnetdiscover, ibqueryerrors) look for it.
const (
	DefaultFarEndInterval = time.Minute
	DefaultFarEndTimeout  = 2 * time.Second
	DefaultNodeNameMap    = "/etc/rdma/ib-node-name-map"
)

// maxMADTimeout is the largest budget a request to nichealth-mad carries
// (the wire's MaxTimeout, 60000 ms). config, the configuration's model,
// does not import the helper's wire format: TestFarEnd_40_12_TimeoutBoundedAsTheWireIs
// puts the largest accepted budget on the wire and fails if the two part.
const maxMADTimeout = 60 * time.Second

// madTimeoutProblem bounds a request's budget to the helper as its wire
// carries it: whole milliseconds, at most maxMADTimeout. A budget the
// wire cannot carry would be refused by the client on every request at
// run time (or cut to a shorter one), after validate said it was fine.
// Below 10 ms no MAD answers.
func madTimeoutProblem(d time.Duration) string {
	maxD := maxMADTimeout
	switch {
	case d < 10*time.Millisecond || d > maxD:
		return fmt.Sprintf("%v must be 10ms..%v (a request to nichealth-mad carries at most %d ms)", d, maxD, maxD.Milliseconds())
	case d%time.Millisecond != 0:
		return fmt.Sprintf("%v is not a whole number of milliseconds, as requests to nichealth-mad carry it (e.g. %v)", d, d.Truncate(time.Millisecond))
	}
	return ""
}

// farEndFrom reads [farEnd].
func farEndFrom(c *Config, f *File, bad badFunc) error {
	v := f.FarEnd
	c.FarEnd = FarEndConfig{Enabled: boolOr(v.Enabled, true), Interval: DefaultFarEndInterval, Timeout: DefaultFarEndTimeout,
		NodeNameMap: DefaultNodeNameMap, NodeNameMapOptional: true}
	setDur(&c.FarEnd.Interval, v.Interval)
	setDur(&c.FarEnd.Timeout, v.Timeout)
	if d := c.FarEnd.Interval; d < time.Second || d > time.Hour {
		return bad("farEnd.interval", "%v must be 1s..1h", d)
	}
	if r := madTimeoutProblem(c.FarEnd.Timeout); r != "" {
		return bad("farEnd.timeout", "%s", r)
	}
	if c.FarEnd.Timeout >= c.FarEnd.Interval {
		return bad("farEnd.timeout", "%v must be shorter than farEnd.interval (%v)", c.FarEnd.Timeout, c.FarEnd.Interval)
	}
	if p := v.NodeNameMap; p != nil {
		// The default spelled out is the default: used when present, as
		// rdma-core's tools use it.
		c.FarEnd.NodeNameMap, c.FarEnd.NodeNameMapOptional = *p, *p == DefaultNodeNameMap
		if *p != "" {
			if !filepath.IsAbs(*p) || !utf8.ValidString(*p) || strings.IndexByte(*p, 0) >= 0 {
				return bad("farEnd.nodeNameMap", "%q must be an absolute path, or \"\" to name peers by their NodeDescription", *p)
			}
			// A map named in the file is one the operator means to use:
			// missing, it is a typo or a file not yet deployed, and either
			// way every peer would be named wrongly without a word but one
			// log line. Refused, so validate and the reload say it; the
			// daemon runs without a map when the key is left out or set to
			// "" (only the default path is used when present).
			if *p != DefaultNodeNameMap {
				fi, err := os.Stat(*p)
				switch {
				case errors.Is(err, os.ErrNotExist):
					return bad("farEnd.nodeNameMap", "%s does not exist: deploy the map there (the format of infiniband-diags' ib-node-name-map), or set nodeNameMap = \"\" to name peers by their NodeDescription", *p)
				case err != nil:
					// EACCES to a validating user who is not the daemon's:
					// the daemon says at run time whether it can read it.
				case !fi.Mode().IsRegular():
					return bad("farEnd.nodeNameMap", "%s is not a regular file: name the map file", *p)
				}
			} else if fi, err := os.Stat(*p); err == nil && !fi.Mode().IsRegular() {
				return bad("farEnd.nodeNameMap", "%s is not a regular file: name the map file", *p)
			}
		}
	}
	if err := countertable.ValidateFarEnd(v.Counters); err != nil {
		return bad("farEnd.counters", "%v", err)
	}
	c.FarEnd.Judge = countertable.FarEndSwitches(v.Counters)
	c.FarEnd.Rows = countertable.FarEndTable(c.Counters, v.Counters)
	return nil
}
