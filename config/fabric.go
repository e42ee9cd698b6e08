package config

import (
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// FabricFile is the [fabric] table: this host's share of the fabric's
// switch ports, as nichealth-fabric plan assigned them (DESIGN.md section
// 14), read by PMA through nichealth-mad.
type FabricFile struct {
	// Assignment is nil when the key is absent (the conventional path,
	// used when present), "" to read no share at all.
	Assignment *string  `toml:"assignment"`
	Host       string   `toml:"host"`
	Interval   Duration `toml:"interval"`
	Timeout    Duration `toml:"timeout"`
}

// FabricConfig is [fabric] with defaults applied.
type FabricConfig struct {
	// Assignment is the assignment file ("": none is read);
	// AssignmentOptional says it is the conventional path, quietly
	// nothing while absent.
	Assignment         string
	AssignmentOptional bool
	// Host is the name whose list the file is read for; "" is the
	// host name's first label (hostname -s).
	Host string
	// Interval is the time over which every assigned port is read once,
	// the reads spread evenly across it; Timeout bounds one request to
	// the helper.
	Interval time.Duration
	Timeout  time.Duration
}

// The [fabric] defaults and why:
//   - assignment /etc/nichealthd/fabric-assignment.json, used when
//     present: what brings the plan to a node is a file drop (a job's
//     prolog, configuration management), so a node with the file reads its
//     share and a node without one reads nothing and sends no MAD, with no
//     configuration change on either; the file is watched, so dropping or
//     removing it takes effect within a second.
//   - interval 60s: a switch port's error counters are read for trends
//     by the fleet's rules, at Prometheus's usual minute; and at least
//     10s, because every host of a job reads its share, and a switch's
//     management processor answers every PMA Get of every host.
//   - timeout 2s: as [farEnd]'s; a PMA Get crosses the fabric to a switch
//     that may be a few hops away.
const (
	DefaultFabricAssignment = "/etc/nichealthd/fabric-assignment.json"
	DefaultFabricInterval   = time.Minute
	DefaultFabricTimeout    = 2 * time.Second
)

// fabricFrom reads [fabric].
func fabricFrom(c *Config, f *File, bad badFunc) error {
	v := f.Fabric
	c.Fabric = FabricConfig{Assignment: DefaultFabricAssignment, AssignmentOptional: true, Host: v.Host,
		Interval: DefaultFabricInterval, Timeout: DefaultFabricTimeout}
	if p := v.Assignment; p != nil {
		// The default spelled out is the default: used when present.
		c.Fabric.Assignment, c.Fabric.AssignmentOptional = *p, *p == DefaultFabricAssignment
		if *p != "" && (!filepath.IsAbs(*p) || !utf8.ValidString(*p) || strings.IndexByte(*p, 0) >= 0 || strings.HasSuffix(*p, "/")) {
			return bad("fabric.assignment", "%q must be an absolute file path, or \"\" to read no share of the fabric", *p)
		}
	}
	if h := v.Host; h != "" && !hostName(h) {
		return bad("fabric.host", "%q is not a host name (letters, digits, '-', '_', '.'; at most 253): the name nichealth-fabric plan wrote this host's list under", h)
	}
	setDur(&c.Fabric.Interval, v.Interval)
	setDur(&c.Fabric.Timeout, v.Timeout)
	if d := c.Fabric.Interval; d < 10*time.Second || d > time.Hour {
		return bad("fabric.interval", "%v must be 10s..1h", d)
	}
	if r := madTimeoutProblem(c.Fabric.Timeout); r != "" {
		return bad("fabric.timeout", "%s", r)
	}
	return nil
}

func hostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
