package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

func boolOr(p *bool, d bool) bool {
	if p == nil {
		return d
	}
	return *p
}

// badFunc makes the error of one key.
type badFunc func(key, format string, a ...any) error

func fromFile(path string, f *File) (*Config, error) {
	bad := func(key, format string, a ...any) error {
		return &Error{File: path, Key: key, Reason: fmt.Sprintf(format, a...)}
	}
	c := &Config{Path: path}
	for _, step := range []func(*Config, *File, badFunc) error{
		pathsFrom, topologyFrom, timingFrom, identityFrom, countersFrom, sanityAndRulesFrom, aerFrom, kernelLogFrom, inventoryFrom, madFrom, farEndFrom, roceFrom, cableFrom, fabricFrom, sinksFrom, outboxAndBusFrom,
	} {
		if err := step(c, f, bad); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// pathsFrom reads paths: every root and class path absolute.
func pathsFrom(c *Config, f *File, bad badFunc) error {
	c.Paths = topology.Paths{
		SysfsRoot: f.SysfsRoot, ProcfsRoot: f.ProcfsRoot, DevRoot: f.DevRoot,
		ClassInfiniBand: f.SysClassInfinibandPath, ClassNet: f.SysClassNetPath,
	}.WithDefaults()
	// In key order, so that a relative sysfsRoot is named rather than the
	// class paths derived from it.
	for _, kv := range [][2]string{
		{"sysfsRoot", c.Paths.SysfsRoot}, {"procfsRoot", c.Paths.ProcfsRoot}, {"devRoot", c.Paths.DevRoot},
		{"sysClassInfinibandPath", c.Paths.ClassInfiniBand}, {"sysClassNetPath", c.Paths.ClassNet},
	} {
		if !filepath.IsAbs(kv[1]) {
			return bad(kv[0], "%q must be an absolute path", kv[1])
		}
	}
	return nil
}

// topologyFrom reads the GPU topology source and the NIC filters.
func topologyFrom(c *Config, f *File, bad badFunc) error {
	var err error
	c.MetadataPath = f.MetadataPath
	if c.MetadataPath == "" {
		c.MetadataPath = "/var/lib/nvsentinel/gpu_metadata.json"
	}
	c.TopologySource = f.TopologySource
	if c.TopologySource == "" {
		c.TopologySource = "auto"
	}
	switch c.TopologySource {
	case "auto", "metadata", "sysfs":
	default:
		return bad("topologySource", "%q is not one of auto, metadata, sysfs", c.TopologySource)
	}
	c.ExclusionRaw = DefaultExclusion
	if f.NicExclusionRegex != nil {
		c.ExclusionRaw = *f.NicExclusionRegex
	}
	if c.Filter.Exclude, err = topology.CompileList(c.ExclusionRaw); err != nil {
		return bad("nicExclusionRegex", "%v", err)
	}
	c.InclusionRaw = f.NicInclusionRegexOverride
	if c.Filter.IncludeOverride, err = topology.CompileList(c.InclusionRaw); err != nil {
		return bad("nicInclusionRegexOverride", "%v", err)
	}
	return nil
}

// timingFrom reads the poll interval and the read deadline.
func timingFrom(c *Config, f *File, bad badFunc) error {
	c.PollInterval = f.PollingInterval.or(time.Second)
	if c.PollInterval < 10*time.Millisecond || c.PollInterval > time.Hour {
		return bad("pollingInterval", "%v is outside 10ms..1h (how often every port is read; leave the key out for the default 1s)", c.PollInterval)
	}
	c.ReadTimeout = f.ReadTimeout.or(time.Second)
	if c.ReadTimeout < time.Millisecond || c.ReadTimeout > time.Minute {
		return bad("readTimeout", "%v is outside 1ms..1m (leave the key out for the default 1s)", c.ReadTimeout)
	}
	// Written, 0 is validated as 0 (refused), never the default in disguise.
	c.MaxStuckReads = 4
	if f.MaxStuckReads != nil {
		c.MaxStuckReads = *f.MaxStuckReads
	}
	if c.MaxStuckReads < 1 || c.MaxStuckReads > 1024 {
		return bad("maxStuckReads", "%d is outside 1..1024 (leave the key out for the default 4)", c.MaxStuckReads)
	}
	c.CardAnomalyHold = DefaultCardAnomalyHold
	if f.CardAnomalyHold != nil {
		c.CardAnomalyHold = f.CardAnomalyHold.Duration
	}
	if c.CardAnomalyHold < 0 || c.CardAnomalyHold > maxCardAnomalyHold {
		// Longer than the drop rule's 4 minutes and a port stuck in INIT
		// would be judged by nothing for that long.
		return bad("cardAnomalyHold", "%v is outside 0s..%v (default %v: how long a card may lack ports against its peers before it is fatal)",
			c.CardAnomalyHold, maxCardAnomalyHold, DefaultCardAnomalyHold)
	}
	return parkFrom(c, f, bad)
}

// maxCardAnomalyHold bounds cardAnomalyHold: the drop rule (seed state
// 6.2) already calls a port DOWN for 4 minutes dropped.
const maxCardAnomalyHold = 4 * time.Minute

// identityFrom reads node name, processing strategy, checks and the metrics address.
func identityFrom(c *Config, f *File, bad badFunc) error {
	var err error
	c.NodeName = f.NodeName
	if !utf8.ValidString(c.NodeName) || strings.ContainsFunc(c.NodeName, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		// It goes into every event, journal field and gRPC string, where
		// invalid UTF-8 fails to marshal and a NUL truncates.
		return bad("nodeName", "%q contains a control character or invalid UTF-8: use the node's Kubernetes name", c.NodeName)
	}
	c.Strategy = event.StrategyExecuteRemediation
	if f.ProcessingStrategy != "" {
		if c.Strategy, err = event.ParseProcessingStrategy(f.ProcessingStrategy); err != nil {
			return bad("processingStrategy", "%v", err)
		}
	}
	if c.Checks, err = ParseChecks(f.Checks); err != nil {
		return bad("checks", "%v", err)
	}
	c.MetricsAddress = f.MetricsAddress
	if c.MetricsAddress != "" {
		if r := listenAddressProblem(c.MetricsAddress); r != "" {
			return bad("metricsAddress", "%q %s", c.MetricsAddress, r)
		}
	}
	return nil
}

// listenAddressProblem checks a host:port to listen on as far as can be
// told without listening: a port out of 1..65535 would only fail when the
// daemon binds, after the configuration was said to be valid. Port 0 (a
// free port, which the daemon logs) is kept for tests and one-off runs.
func listenAddressProblem(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "is not host:port (e.g. \"127.0.0.1:2112\", or \":2112\" for every address)"
	}
	n, err := strconv.ParseUint(port, 10, 32)
	if err != nil || n > 65535 {
		return fmt.Sprintf("has port %q: a port is a number 1..65535 (e.g. \"%s\")", port, net.JoinHostPort(host, "2112"))
	}
	if strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }) {
		return fmt.Sprintf("has host %q: name an IP address or a host name of this node, or leave it empty for every address", host)
	}
	return ""
}

// MaxDescriptionBytes bounds a counter's description.
const MaxDescriptionBytes = 1024

// countersFrom reads counter detection and its table.
func countersFrom(c *Config, f *File, bad badFunc) error {
	var err error
	c.CountersEnabled = boolOr(f.CounterDetection.Enabled, true)
	c.XmitWaitBytesPerTick = 8
	if p := f.CounterDetection.XmitWaitBytesPerTick; p != nil {
		c.XmitWaitBytesPerTick = *p
	}
	if x := c.XmitWaitBytesPerTick; math.IsNaN(x) || x <= 0 || x > 1<<20 {
		return bad("counterDetection.xmitWaitBytesPerTick", "%v must be positive and at most 1048576 (bytes per port_xmit_wait tick; 8 unless the NIC's documentation says otherwise)", x)
	}
	for i, o := range f.CounterDetection.Counters {
		// The description is the text of every event of its counter:
		// bounded here, so an operator learns of a cut at once rather than
		// from truncated events (event.New bounds them anyway).
		if o.Description != nil && len(*o.Description) > MaxDescriptionBytes {
			return bad(fmt.Sprintf("counterDetection.counters[%d].description", i),
				"is %d bytes, above the limit of %d: describe the fault in a sentence", len(*o.Description), MaxDescriptionBytes)
		}
	}
	if c.Counters, err = countertable.Merge(countertable.TableDefaults(), f.CounterDetection.Counters); err != nil {
		return counterError(c.Path, err)
	}
	return nil
}

// counterError names the first rejected entry's key (with its index, so
// Parse finds its line) and says every problem.
func counterError(path string, err error) error {
	var ve *countertable.ValidationError
	if !errors.As(err, &ve) || ve.Index < 0 || ve.Key == "" {
		return &Error{File: path, Reason: err.Error()}
	}
	reason := ve.Key + " " + ve.Reason
	if ve.Counter != "" && ve.Key != "name" {
		reason = fmt.Sprintf("%s (counter %q)", reason, ve.Counter)
	} else if ve.Counter != "" {
		reason = fmt.Sprintf("%q %s", ve.Counter, ve.Reason)
	}
	var all interface{ Unwrap() []error }
	if errors.As(err, &all) {
		if rest := all.Unwrap(); len(rest) > 1 {
			reason += "; also: " + errors.Join(rest[1:]...).Error()
			reason = strings.ReplaceAll(reason, "\n", "; ")
		}
	}
	return &Error{File: path, Key: fmt.Sprintf("counterDetection.counters[%d].%s", ve.Index, ve.Key), Reason: reason}
}

// sanityAndRulesFrom reads link sanity and the node-local analyzer rules.
func sanityAndRulesFrom(c *Config, f *File, bad badFunc) error {
	var err error
	s := f.LinkSanity
	c.Sanity = SanityConfig{
		Enabled: boolOr(s.Enabled, true), PCIe: boolOr(s.PCIe, true), RateVsPeers: boolOr(s.RateVsPeers, true),
		SMLID: boolOr(s.SMLID, true), CharDevices: boolOr(s.CharDevices, true), ISSM: boolOr(s.ISSM, false),
		RoCEGID: boolOr(s.RoCEGID, true), Fatal: boolOr(s.Fatal, false),
	}

	if c.Rules, err = rulesConfig(f.Rules, bad); err != nil {
		if _, ok := err.(*Error); !ok {
			err = &Error{File: c.Path, Key: "rules", Reason: err.Error()}
		}
		return err
	}
	return nil
}

// sinksFrom reads the event sinks.
func sinksFrom(c *Config, f *File, bad badFunc) error {
	c.JournalEnabled = boolOr(f.Sinks.Journal.Enabled, true)
	c.JSONLPath = f.Sinks.JSONL.Path
	if c.JSONLPath != "" && c.JSONLPath != "-" {
		if strings.IndexByte(c.JSONLPath, 0) >= 0 || !utf8.ValidString(c.JSONLPath) {
			return bad("sinks.jsonl.path", "%q contains a NUL byte or invalid UTF-8: name a file by an absolute path", c.JSONLPath)
		}
		if !filepath.IsAbs(c.JSONLPath) {
			// Relative to what the daemon's working directory happens to
			// be, which systemd sets to /.
			return bad("sinks.jsonl.path", "%q must be an absolute path (or \"-\" for stdout)", c.JSONLPath)
		}
		if fi, err := os.Stat(c.JSONLPath); err == nil && !fi.Mode().IsRegular() {
			if fi.IsDir() {
				return bad("sinks.jsonl.path", "%s is a directory: name a file in it (e.g. %s), or \"-\" for stdout", c.JSONLPath, filepath.Join(c.JSONLPath, "events.jsonl"))
			}
			return bad("sinks.jsonl.path", "%s is not a regular file (%s): name a file, or \"-\" for stdout", c.JSONLPath, fi.Mode().Type())
		}
	}
	c.ConnectorSocket = f.Sinks.Connector.Socket
	// batchInterval = "0s" is kept: each event is sent on its own.
	c.ConnectorBatch = f.Sinks.Connector.BatchInterval.or(time.Second)
	c.ConnectorTimeout = f.Sinks.Connector.Timeout.or(5 * time.Second)
	if c.ConnectorTimeout < 10*time.Millisecond || c.ConnectorTimeout > 5*time.Minute {
		// Below a few ms every call fails before the connector can
		// answer, and events would wait forever.
		return bad("sinks.connector.timeout", "%v is outside 10ms..5m", c.ConnectorTimeout)
	}
	if c.ConnectorBatch < 0 || c.ConnectorBatch > time.Minute {
		return bad("sinks.connector.batchInterval", "%v is outside 0..1m", c.ConnectorBatch)
	}
	return nil
}

// outboxAndBusFrom reads the outbox bound and D-Bus.
func outboxAndBusFrom(c *Config, f *File, bad badFunc) error {
	c.OutboxMaxBytes = 64 << 20
	if f.Outbox.MaxBytes != nil {
		c.OutboxMaxBytes = *f.Outbox.MaxBytes
	}
	if c.OutboxMaxBytes < 64<<10 {
		return bad("outbox.maxBytes", "%d is below the minimum of 65536 (leave the key out for the default 67108864, 64 MiB)", c.OutboxMaxBytes)
	}
	c.DBusEnabled = boolOr(f.DBus.Enabled, true)
	c.AdminGroup = f.DBus.AdminGroup
	if c.AdminGroup == "" {
		c.AdminGroup = "nichealth-admin"
	}
	return nil
}

// DefaultCardAnomalyHold is how long a card must stay below its peers' mode before it
// is an anomaly (cardAnomalyHold): seed 3.1 calls INIT "problematic if
// stuck >30s". Every port passes INIT while the subnet manager sweeps, and
// LinkErrorRecovery is the firmware retrying, so a shorter shortfall is a
// blip, never a fatal REPLACE_VM (DESIGN.md difference 4).
const DefaultCardAnomalyHold = 30 * time.Second
