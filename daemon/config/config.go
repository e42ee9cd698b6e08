package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"

	"github.com/nichealth/nichealthd/checks/cards"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/topology"
)

// DefaultPath is where packaging installs the configuration.
const DefaultPath = "/etc/nichealthd/config.toml"

// AllChecks are the check names --checks and `checks` accept.
var AllChecks = []string{
	event.InfiniBandStateCheck, event.InfiniBandDegradationCheck,
	event.EthernetStateCheck, event.EthernetDegradationCheck,
	kernellog.CheckName,
}

// RuleChecks are the node-local analyzer rules ([rules]); --checks and
// the checks key name them like the other checks.
var RuleChecks = []string{rules.FlapCheck, rules.DropCheck, rules.DegradationCheck}

// LegacyRuleChecks are the rules' check names before they took the seeds'
// names (DESIGN.md difference 15), by their new names: still accepted in
// checks and --checks, and migrated in a state file's conditions.
var LegacyRuleChecks = map[string]string{
	"NICLinkFlapRule":    rules.FlapCheck,
	"NICPortDropRule":    rules.DropCheck,
	"NICDegradationRule": rules.DegradationCheck,
}

// KnownChecks is every check name --checks and the checks key accept.
func KnownChecks() []string { return append(append([]string{}, AllChecks...), RuleChecks...) }

// Duration is a time.Duration written as "1s", "250ms" in TOML.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like \"1s\" or \"250ms\"", b)
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// File is the TOML document. Key names follow NVSentinel's where it has
// them, so a ConfigMap written for its nic-health-monitor reads here.
type File struct {
	SysfsRoot                 string    `toml:"sysfsRoot"`
	ProcfsRoot                string    `toml:"procfsRoot"`
	DevRoot                   string    `toml:"devRoot"`
	SysClassInfinibandPath    string    `toml:"sysClassInfinibandPath"`
	SysClassNetPath           string    `toml:"sysClassNetPath"`
	MetadataPath              string    `toml:"metadataPath"`
	TopologySource            string    `toml:"topologySource"`
	NicExclusionRegex         *string   `toml:"nicExclusionRegex"`
	NicInclusionRegexOverride string    `toml:"nicInclusionRegexOverride"`
	PollingInterval           Duration  `toml:"pollingInterval"`
	ReadTimeout               Duration  `toml:"readTimeout"`
	MaxStuckReads             int       `toml:"maxStuckReads"`
	ParkReprobeInterval       Duration  `toml:"parkReprobeInterval"`
	CardAnomalyHold           *Duration `toml:"cardAnomalyHold"`
	NodeName                  string    `toml:"nodeName"`
	ProcessingStrategy        string    `toml:"processingStrategy"`
	Checks                    []string  `toml:"checks"`
	MetricsAddress            string    `toml:"metricsAddress"`

	CounterDetection struct {
		Enabled              *bool               `toml:"enabled"`
		XmitWaitBytesPerTick *float64            `toml:"xmitWaitBytesPerTick"`
		Counters             []counters.Override `toml:"counters"`
	} `toml:"counterDetection"`

	LinkSanity LinkSanity `toml:"linkSanity"`

	Rules RulesFile `toml:"rules"`

	PCIeAER AERFile `toml:"pcieAER"`

	KernelLog KernelLogFile `toml:"kernelLog"`

	Inventory InventoryFile `toml:"inventory"`

	Sinks struct {
		Journal struct {
			Enabled *bool `toml:"enabled"`
		} `toml:"journal"`
		JSONL struct {
			Path string `toml:"path"`
		} `toml:"jsonl"`
		Connector struct {
			Socket        string   `toml:"socket"`
			BatchInterval Duration `toml:"batchInterval"`
			Timeout       Duration `toml:"timeout"`
		} `toml:"connector"`
	} `toml:"sinks"`

	Outbox struct {
		MaxBytes int64 `toml:"maxBytes"`
	} `toml:"outbox"`

	DBus struct {
		Enabled    *bool  `toml:"enabled"`
		AdminGroup string `toml:"adminGroup"`
	} `toml:"dbus"`
}

// LinkSanity switches the checks borrowed from the classic IB health check.
type LinkSanity struct {
	Enabled     *bool `toml:"enabled"`
	PCIe        *bool `toml:"pcie"`
	RateVsPeers *bool `toml:"rateVsPeers"`
	SMLID       *bool `toml:"smLid"`
	CharDevices *bool `toml:"charDevices"`
	ISSM        *bool `toml:"issm"`
	RoCEGID     *bool `toml:"roceGid"`
	Fatal       *bool `toml:"fatal"`
}

// Config is the validated, defaulted configuration the daemon runs with.
type Config struct {
	Path string
	// Digest identifies the file's bytes: a reload of an unchanged file
	// is told apart from a change.
	Digest         string
	Paths          topology.Paths
	MetadataPath   string
	TopologySource string
	Filter         topology.Filter
	ExclusionRaw   string
	InclusionRaw   string
	PollInterval   time.Duration
	ReadTimeout    time.Duration
	MaxStuckReads  int
	// ParkReprobe is how often a parked file (one failing with EINVAL,
	// EIO, EOPNOTSUPP, EACCES or EPERM three times in a row) is read again.
	ParkReprobe time.Duration
	// CardAnomalyHold is how long a card must stay below its peers' mode
	// (and a role group's IB ports wait for a subnet manager) before it
	// is reported (DESIGN.md differences 4 and 12).
	CardAnomalyHold time.Duration
	NodeName        string
	Strategy        event.ProcessingStrategy
	Checks          map[string]bool
	MetricsAddress  string

	CountersEnabled      bool
	Counters             []counters.Definition
	XmitWaitBytesPerTick float64

	Sanity SanityConfig

	// Rules are the node-local flap, drop and degradation rules.
	Rules rules.Config

	PCIeAER AERConfig

	KernelLog KernelLogConfig

	Inventory InventoryConfig

	JournalEnabled   bool
	JSONLPath        string
	ConnectorSocket  string
	ConnectorBatch   time.Duration
	ConnectorTimeout time.Duration
	OutboxMaxBytes   int64
	DBusEnabled      bool
	AdminGroup       string
}

// SanityConfig is LinkSanity with defaults applied.
type SanityConfig struct {
	Enabled, PCIe, RateVsPeers, SMLID, CharDevices, ISSM, RoCEGID, Fatal bool
}

// Error names the file, the key, the line where the key is set (0 when
// unknown) and the reason.
type Error struct {
	File, Key, Reason string
	Line              int
}

func (e *Error) Error() string {
	switch {
	case e.Key == "":
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	case e.Line > 0:
		return fmt.Sprintf("%s: %s: line %d: %s", e.File, e.Key, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Reason)
}

// DefaultExclusion is NVSentinel's default nicExclusionRegex.
const DefaultExclusion = "^veth.*,^docker.*,^br-.*,^lo$"

// Load reads and validates path. A missing file at the default path is the
// built-in defaults (a fresh package install has one, but an operator may
// delete it); a missing file anywhere else is an error, because a typo in
// --config must not silently run with defaults.
func Load(path string) (*Config, error) {
	var l Loader
	return l.Load(path)
}

// Loader loads the configuration as Load does, for a process that loads
// it again and again (the daemon's reloads). A read that hangs (a hung
// network filesystem) is abandoned after the deadline but stays pending,
// and the next Load of the same file waits on that read instead of
// starting another: each read blocked in the kernel holds an OS thread,
// and a reload every second would otherwise end in thread exhaustion.
// The zero value is ready; it is safe for concurrent use.
type Loader struct {
	// Deadline bounds how long Load waits for the file (0: 5 s).
	Deadline time.Duration

	mu      sync.Mutex
	pending map[string]*pendingRead
}

// pendingRead is one read of a file in flight; done closes when it ends.
type pendingRead struct {
	done chan struct{}
	b    []byte
	err  error
}

// Load reads and validates path (see the package-level Load).
func (l *Loader) Load(path string) (*Config, error) {
	deadline := l.Deadline
	if deadline <= 0 {
		deadline = readDeadline
	}
	b, err := l.read(path, deadline)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && path == DefaultPath {
			b = nil
		} else {
			return nil, &Error{File: path, Reason: fmt.Sprintf("cannot read: %v", err)}
		}
	}
	return Parse(path, b)
}

// Bounds on reading the configuration file.
const (
	maxConfigBytes = 1 << 20
	readDeadline   = 5 * time.Second
)

// read reads a configuration file that anyone with write access to
// its directory may have replaced: only a regular file (or a symlink to
// one, as ConfigMaps are) of at most 1 MiB is read. A FIFO would block the
// read forever and /dev/zero would exhaust memory; the non-blocking open
// and the type check on the open file refuse both at once. A regular file
// on a hung network filesystem is abandoned after deadline.
// A read still pending from an earlier call is joined, never
// duplicated.
func (l *Loader) read(path string, deadline time.Duration) ([]byte, error) {
	l.mu.Lock()
	r, joined := l.pending[path]
	if !joined {
		r = &pendingRead{done: make(chan struct{})}
		if l.pending == nil {
			l.pending = map[string]*pendingRead{}
		}
		l.pending[path] = r
		go func() {
			r.b, r.err = regularfile.Read(path, maxConfigBytes)
			l.mu.Lock()
			delete(l.pending, path)
			l.mu.Unlock()
			close(r.done)
		}()
	}
	l.mu.Unlock()
	t := time.NewTimer(deadline)
	defer t.Stop()
	select {
	case <-r.done:
		return r.b, r.err
	case <-t.C:
		if joined {
			return nil, fmt.Errorf("no answer within %v; an earlier read of the file has not returned either (a hung filesystem?)", deadline)
		}
		return nil, fmt.Errorf("no answer within %v (a hung filesystem?)", deadline)
	}
}

// Parse validates a TOML document; path is only used in messages.
func Parse(path string, b []byte) (*Config, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			k := strings.Join(sm.Errors[0].Key(), ".")
			return nil, &Error{File: path, Key: k, Reason: "unknown key (check the spelling; see nichealthd.toml(5))"}
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			key := strings.Join(de.Key(), ".")
			return nil, &Error{File: path, Key: key, Reason: fmt.Sprintf("line %d column %d: %s", row, col, de.Error())}
		}
		if e := durationError(path, keyLines(b)); e != nil {
			return nil, e
		}
		if e := patternDurationError(path, b); e != nil {
			return nil, e
		}
		return nil, &Error{File: path, Reason: err.Error()}
	}
	c, err := fromFile(path, &f)
	if e, ok := err.(*Error); ok && e.Key != "" && e.Line == 0 {
		e.Line = keyLines(b)[e.Key].line
		if e.Line == 0 {
			e.Line = indexedKeyLine(b, e.Key)
		}
	}
	if c != nil {
		sum := sha256.Sum256(b)
		c.Digest = hex.EncodeToString(sum[:])
	}
	return c, err
}

// durationKeys take a duration string ("1s", "250ms").
var durationKeys = []string{"pollingInterval", "readTimeout", "parkReprobeInterval", "cardAnomalyHold", "sinks.connector.batchInterval", "sinks.connector.timeout",
	"inventory.expectedPortsHold"}

// durationError names the key and line of a duration written as something
// else (pollingInterval = 5), which the decoder reports without either.
func durationError(path string, lines map[string]keyLine) *Error {
	for _, k := range durationKeys {
		kl, ok := lines[k]
		if !ok {
			continue
		}
		raw := kl.raw
		if i := strings.Index(raw, " #"); i >= 0 {
			raw = strings.TrimSpace(raw[:i])
		}
		if len(raw) >= 2 && (raw[0] == '"' || raw[0] == '\'') && raw[len(raw)-1] == raw[0] {
			if _, err := time.ParseDuration(raw[1 : len(raw)-1]); err == nil {
				continue
			}
		}
		return &Error{File: path, Key: k, Line: kl.line,
			Reason: fmt.Sprintf("%s is not a duration: write a quoted duration such as \"1s\" or \"250ms\"", raw)}
	}
	return nil
}

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
		pathsFrom, topologyFrom, timingFrom, identityFrom, countersFrom, sanityAndRulesFrom, aerFrom, kernelLogFrom, inventoryFrom, sinksFrom, outboxAndBusFrom,
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
	c.PollInterval = f.PollingInterval.Duration
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.PollInterval < 10*time.Millisecond || c.PollInterval > time.Hour {
		return bad("pollingInterval", "%v is outside 10ms..1h", c.PollInterval)
	}
	c.ReadTimeout = f.ReadTimeout.Duration
	if c.ReadTimeout == 0 {
		c.ReadTimeout = time.Second
	}
	if c.ReadTimeout < time.Millisecond || c.ReadTimeout > time.Minute {
		return bad("readTimeout", "%v is outside 1ms..1m", c.ReadTimeout)
	}
	c.MaxStuckReads = f.MaxStuckReads
	if c.MaxStuckReads == 0 {
		c.MaxStuckReads = 4
	}
	if c.MaxStuckReads < 1 || c.MaxStuckReads > 1024 {
		return bad("maxStuckReads", "%d is outside 1..1024", c.MaxStuckReads)
	}
	c.CardAnomalyHold = cards.DefaultHold
	if f.CardAnomalyHold != nil {
		c.CardAnomalyHold = f.CardAnomalyHold.Duration
	}
	if c.CardAnomalyHold < 0 || c.CardAnomalyHold > maxCardAnomalyHold {
		// Longer than the drop rule's 4 minutes and a port stuck in INIT
		// would be judged by nothing for that long.
		return bad("cardAnomalyHold", "%v is outside 0s..%v (default %v: how long a card may lack ports against its peers before it is fatal)",
			c.CardAnomalyHold, maxCardAnomalyHold, cards.DefaultHold)
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
		if _, _, err := net.SplitHostPort(c.MetricsAddress); err != nil {
			return bad("metricsAddress", "%q is not host:port (e.g. \"127.0.0.1:2112\")", c.MetricsAddress)
		}
	}
	return nil
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
	if c.Counters, err = counters.Merge(counters.TableDefaults(), f.CounterDetection.Counters); err != nil {
		return &Error{File: c.Path, Reason: err.Error()}
	}
	return nil
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
	c.ConnectorBatch = f.Sinks.Connector.BatchInterval.Duration
	if c.ConnectorBatch == 0 {
		c.ConnectorBatch = time.Second
	}
	c.ConnectorTimeout = f.Sinks.Connector.Timeout.Duration
	if c.ConnectorTimeout == 0 {
		c.ConnectorTimeout = 5 * time.Second
	}
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
	c.OutboxMaxBytes = f.Outbox.MaxBytes
	if c.OutboxMaxBytes == 0 {
		c.OutboxMaxBytes = 64 << 20
	}
	if c.OutboxMaxBytes < 64<<10 {
		return bad("outbox.maxBytes", "%d is below the minimum of 65536", c.OutboxMaxBytes)
	}
	c.DBusEnabled = boolOr(f.DBus.Enabled, true)
	c.AdminGroup = f.DBus.AdminGroup
	if c.AdminGroup == "" {
		c.AdminGroup = "nichealth-admin"
	}
	return nil
}

// ParseChecks validates a list of check names; empty means all.
func ParseChecks(list []string) (map[string]bool, error) {
	m := map[string]bool{}
	if len(list) == 0 {
		for _, c := range KnownChecks() {
			m[c] = true
		}
		return m, nil
	}
	for _, n := range list {
		n = strings.TrimSpace(n)
		if n == "" {
			// A blank name would leave every check off without a word:
			// a list means "only these".
			return nil, fmt.Errorf("empty check name in the list (known: %s); leave the list out to run every check", strings.Join(KnownChecks(), ", "))
		}
		if nw, ok := LegacyRuleChecks[n]; ok {
			// A configuration written before the rules took the seeds'
			// names keeps working.
			n = nw
		}
		if !slices.Contains(KnownChecks(), n) {
			return nil, fmt.Errorf("unknown check %q (known: %s)", n, strings.Join(KnownChecks(), ", "))
		}
		m[n] = true
	}
	return m, nil
}

// BootIDPath is where the kernel's boot ID lives under procfsRoot.
func (c *Config) BootIDPath() string {
	return filepath.Join(c.Paths.ProcfsRoot, "sys", "kernel", "random", "boot_id")
}

// CountersFingerprint changes whenever the counter set or a threshold does.
func (c *Config) CountersFingerprint() string {
	var sb strings.Builder
	for _, d := range c.Counters {
		sb.WriteString(d.Fingerprint())
		sb.WriteByte(';')
	}
	return sb.String()
}
