package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// DefaultPath is where packaging installs the configuration.
const DefaultPath = "/etc/nichealthd/config.toml"

// AllChecks are the check names --checks and `checks` accept.
var AllChecks = []string{
	event.InfiniBandStateCheck, event.InfiniBandDegradationCheck,
	event.EthernetStateCheck, event.EthernetDegradationCheck,
	event.KernelLogCheck,
	event.TransceiverCheck, event.FirmwareHealthCheck,
	event.FarEndCheck,
}

// RuleChecks are the node-local analyzer rules ([rules]); --checks and
// the checks key name them like the other checks.
var RuleChecks = []string{event.FlapCheck, event.DropCheck, event.DegradationCheck}

// LegacyRuleChecks are the rules' check names before they took the seeds'
// names (DESIGN.md difference 15), by their new names: still accepted in
// checks and --checks, and migrated in a state file's conditions.
var LegacyRuleChecks = map[string]string{
	"NICLinkFlapRule":    event.FlapCheck,
	"NICPortDropRule":    event.DropCheck,
	"NICDegradationRule": event.DegradationCheck,
}

// KnownChecks is every check name --checks and the checks key accept.
func KnownChecks() []string { return append(append([]string{}, AllChecks...), RuleChecks...) }

// Duration is a time.Duration written as "1s", "250ms" in TOML. set says
// the key was written: an explicit "0s" is a value to validate, never the
// default in disguise (pollingInterval = "0s" once silently meant 1s).
type Duration struct {
	time.Duration
	set bool
}

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like \"1s\" or \"250ms\"", b)
	}
	d.Duration, d.set = v, true
	return nil
}

// or is the written duration, or def when the key is absent.
func (d Duration) or(def time.Duration) time.Duration {
	if d.set {
		return d.Duration
	}
	return def
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
	MaxStuckReads             *int      `toml:"maxStuckReads"`
	ParkReprobeInterval       Duration  `toml:"parkReprobeInterval"`
	CardAnomalyHold           *Duration `toml:"cardAnomalyHold"`
	NodeName                  string    `toml:"nodeName"`
	ProcessingStrategy        string    `toml:"processingStrategy"`
	Checks                    []string  `toml:"checks"`
	MetricsAddress            string    `toml:"metricsAddress"`

	CounterDetection struct {
		Enabled              *bool                   `toml:"enabled"`
		XmitWaitBytesPerTick *float64                `toml:"xmitWaitBytesPerTick"`
		Counters             []countertable.Override `toml:"counters"`
	} `toml:"counterDetection"`

	LinkSanity LinkSanity `toml:"linkSanity"`

	Rules RulesFile `toml:"rules"`

	PCIeAER AERFile `toml:"pcieAER"`

	KernelLog KernelLogFile `toml:"kernelLog"`

	Inventory InventoryFile `toml:"inventory"`

	MAD MADFile `toml:"mad"`

	FarEnd FarEndFile `toml:"farEnd"`

	RoCE  RoCEFile  `toml:"roce"`
	Cable CableFile `toml:"cable"`

	Fabric FabricFile `toml:"fabric"`

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
		MaxBytes *int64 `toml:"maxBytes"`
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
	Counters             []countertable.Definition
	XmitWaitBytesPerTick float64

	Sanity SanityConfig

	// Rules are the node-local flap, drop and degradation rules.
	Rules Rules

	PCIeAER AERConfig

	KernelLog KernelLogConfig

	Inventory InventoryConfig

	// MAD is what both MAD readers share: the helper they run.
	MAD MADConfig

	// FarEnd is the switch port at the other end of each IB cable.
	FarEnd FarEndConfig

	// RoCE is the RoCE congestion and loss classes (DESIGN.md section 16).
	RoCE RoCEConfig
	// Cable is the transport budget link-down episodes are measured
	// against.
	Cable CableConfig

	// Fabric is this host's share of the fabric's switch ports.
	Fabric FabricConfig

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

// Parse validates a TOML document; path is only used in messages.
func Parse(path string, b []byte) (*Config, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		if e := decodeFailure(path, b, err); e != nil {
			return nil, e
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
	"inventory.expectedPortsHold", "inventory.lostFunctionHold", "farEnd.interval", "farEnd.timeout", "roce.window",
	"fabric.interval", "fabric.timeout"}

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
