package journal

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"

	"github.com/nichealth/nichealthd/event"

	"github.com/nichealth/nichealthd/internal/component"
)

const catalogPath = "../../packaging/journal/nichealthd.catalog"

var (
	hexID     = regexp.MustCompile(`^[0-9a-f]{32}$`)
	validName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
)

var stamp = event.Stamp{
	NodeName: "gpu-node-7",
	Strategy: event.StrategyExecuteRemediation,
	Now:      time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC),
}

func portFatal() event.Event {
	return event.New(event.Spec{
		Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: true,
		Message: "Port mlx5_0 port 1: state DOWN, phys_state Disabled",
		Device:  "mlx5_0", Port: 1, Card: "0000:3b:00",
	}, stamp)
}

func counterBreach(dev string, fatal bool, counter string) event.Event {
	check := event.InfiniBandDegradationCheck
	return event.New(event.Spec{
		Kind: event.KindCounterBreach, CheckName: check, IsFatal: fatal,
		Message:   "Port " + dev + " port 1: " + counter + " - breach (value=1, delta=1, rate=0.20/sec)",
		ErrorCode: []string{counter}, Device: dev, Port: 1,
		Metadata: map[string]string{"counter": counter, "value": "1", "delta": "1", "rate": "0.20", "threshold": "0"},
	}, stamp)
}

func TestJournal_3_EveryKindHasAFixedMessageID(t *testing.T) {
	seen := map[string]event.Kind{}
	for _, k := range event.Kinds {
		id, ok := MessageID(k)
		if !ok {
			t.Errorf("kind %q has no MESSAGE_ID", k)
			continue
		}
		if !hexID.MatchString(id) {
			t.Errorf("kind %q: MESSAGE_ID %q is not 128-bit lower-case hex", k, id)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("kinds %q and %q share MESSAGE_ID %s", k, other, id)
		}
		seen[id] = k
	}
	if _, ok := MessageID(""); ok {
		t.Error("the empty kind has a MESSAGE_ID")
	}
	if _, ok := MessageID("no-such-kind"); ok {
		t.Error("an unknown kind has a MESSAGE_ID")
	}
}

type catalogEntry struct {
	headers map[string]string
	body    string
}

// parseCatalog reads the journald catalog format: "-- <id> [lang]" starts an
// entry, "Key: value" headers up to a blank line, then the text. Lines
// starting with '#' outside entries are comments.
func parseCatalog(t *testing.T, path string) map[string]catalogEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	defer f.Close()
	entries := map[string]catalogEntry{}
	var id string
	var inHeaders bool
	var cur catalogEntry
	flush := func() {
		if id != "" {
			cur.body = strings.TrimSpace(cur.body)
			entries[id] = cur
		}
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "-- ") {
			flush()
			fields := strings.Fields(strings.TrimPrefix(line, "-- "))
			if len(fields) == 0 || !hexID.MatchString(fields[0]) {
				t.Fatalf("%s:%d: bad entry header %q", path, n, line)
			}
			id = fields[0]
			if _, dup := entries[id]; dup {
				t.Fatalf("%s:%d: MESSAGE_ID %s defined twice", path, n, id)
			}
			cur, inHeaders = catalogEntry{headers: map[string]string{}}, true
			continue
		}
		if id == "" {
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Fatalf("%s:%d: text before the first entry: %q", path, n, line)
			}
			continue
		}
		if inHeaders {
			if line == "" {
				inHeaders = false
				continue
			}
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				t.Fatalf("%s:%d: header %q is not 'Key: value'", path, n, line)
			}
			cur.headers[k] = v
			continue
		}
		cur.body += line + "\n"
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	return entries
}

func TestJournal_3_CatalogDocumentsEveryMessageID(t *testing.T) {
	entries := parseCatalog(t, catalogPath)
	want := map[string]bool{}
	for _, k := range event.Kinds {
		id, _ := MessageID(k)
		want[id] = true
		e, ok := entries[id]
		if !ok {
			t.Errorf("kind %q: MESSAGE_ID %s missing from %s", k, id, catalogPath)
			continue
		}
		if e.headers["Subject"] == "" {
			t.Errorf("kind %q: catalog entry has no Subject", k)
		}
		if e.headers["Defined-By"] != "nichealthd" {
			t.Errorf("kind %q: Defined-By = %q, want nichealthd", k, e.headers["Defined-By"])
		}
		if e.headers["Support"] == "" {
			t.Errorf("kind %q: catalog entry has no Support", k)
		}
		if len(e.body) < 40 {
			t.Errorf("kind %q: catalog text %q is too short to say cause and action", k, e.body)
		}
		// Every @FIELD@ substitution must be a field this package writes,
		// or journalctl -x prints it literally.
		for _, m := range regexp.MustCompile(`@([A-Z0-9_]+)@`).FindAllStringSubmatch(e.headers["Subject"]+e.body, -1) {
			if !isEventField(m[1]) && !map[string]bool{"COUNTER": true, "VALUE": true, "DELTA": true, "RATE": true, "THRESHOLD": true,
				// The inventory's metadata (checks/inventory).
				"PCI": true, "ROLE": true, "FAULT": true, "GPUS": true, "LASTDEVICE": true, "SERIAL": true, "CARD": true,
				"DRIFT": true, "MAJORITY": true, "PREVIOUS": true, "ACTIVEPORTS": true, "EXPECTEDPORTS": true, "EXPECTEDRATEGBPS": true,
				// The kernel log's (checks/kernellog).
				"PATTERN": true,
				// The far end's (checks/farend).
				"PEERNAME": true, "PEERPORT": true, "PEERGUID": true, "FIELD": true,
				// The link story's (checks/transceiver, checks/firmware).
				"FINDING": true}[m[1]] {
				t.Errorf("kind %q: catalog substitutes @%s@, which no event carries", k, m[1])
			}
		}
	}
	for id := range entries {
		if !want[id] {
			t.Errorf("catalog entry %s belongs to no event kind", id)
		}
	}
}

// journalctl itself compiles the catalog into a scratch root, which proves
// the syntax the way `journalctl --update-catalog` on a host would.
func TestJournal_3_CatalogCompilesWithJournalctl(t *testing.T) {
	jc, err := exec.LookPath("journalctl")
	if err != nil {
		component.Missing(t, "journalctl not installed; the parser test above checks the syntax")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "usr/lib/systemd/catalog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nichealthd.catalog"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(jc, "--root="+root, "--update-catalog").CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("journalctl --update-catalog: %v\n%s", err, out)
	}
	out, err := exec.Command(jc, "--root="+root, "--list-catalog").CombinedOutput()
	if err != nil {
		t.Fatalf("journalctl --list-catalog: %v\n%s", err, out)
	}
	for _, k := range event.Kinds {
		id, _ := MessageID(k)
		if !strings.Contains(string(out), id+" nichealthd: ") {
			t.Errorf("compiled catalog lacks %s (%s):\n%s", id, k, out)
		}
	}
}

func TestJournal_3_Priority(t *testing.T) {
	mk := func(k event.Kind, fatal, healthy bool) event.Event {
		return event.New(event.Spec{Kind: k, IsFatal: fatal, IsHealthy: healthy}, stamp)
	}
	tests := []struct {
		name string
		e    event.Event
		want sdjournal.Priority
	}{
		{"port fatal", mk(event.KindPortFatal, true, false), sdjournal.PriCrit},
		{"device disappeared", mk(event.KindDeviceDisappeared, true, false), sdjournal.PriCrit},
		{"card anomaly", mk(event.KindCardAnomaly, true, false), sdjournal.PriCrit},
		{"fatal counter breach", mk(event.KindCounterBreach, true, false), sdjournal.PriErr},
		{"non-fatal counter breach", mk(event.KindCounterBreach, false, false), sdjournal.PriWarning},
		{"counter saturated", mk(event.KindCounterSaturated, false, false), sdjournal.PriWarning},
		{"port non-fatal", mk(event.KindPortNonFatal, false, false), sdjournal.PriWarning},
		{"link sanity", mk(event.KindLinkSanity, false, false), sdjournal.PriWarning},
		{"read stuck", mk(event.KindReadStuck, false, false), sdjournal.PriErr},
		{"read stuck, fatal", mk(event.KindReadStuck, true, false), sdjournal.PriErr},
		{"port recovered", mk(event.KindPortRecovered, false, true), sdjournal.PriNotice},
		{"port baseline", mk(event.KindPortBaseline, false, true), sdjournal.PriNotice},
		{"counter recovered", mk(event.KindCounterRecovered, false, true), sdjournal.PriNotice},
		{"check cleared", mk(event.KindCheckCleared, false, true), sdjournal.PriNotice},
		{"healthy wins over fatal", mk(event.KindPortFatal, true, true), sdjournal.PriNotice},
		{"no kind, fatal", mk("", true, false), sdjournal.PriCrit},
	}
	for _, tc := range tests {
		if got := Priority(tc.e); got != tc.want {
			t.Errorf("%s: Priority = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestJournal_3_EveryEventFieldIsAJournalField(t *testing.T) {
	e := counterBreach("mlx5_0", true, "link_downed")
	e.EntitiesImpacted = append(e.EntitiesImpacted, event.Entity{Type: event.EntityCard, Value: "0000:3b:00"})
	got := Fields(e)
	want := map[string]string{
		"MESSAGE_ID":          MessageIDCounterBreach,
		"SYSLOG_IDENTIFIER":   "nichealthd",
		"NIC_DEVICE":          "mlx5_0",
		"NIC_PORT":            "1",
		"NIC_CARD":            "0000:3b:00",
		"CHECK_NAME":          "InfiniBandDegradationCheck",
		"IS_FATAL":            "true",
		"IS_HEALTHY":          "false",
		"RECOMMENDED_ACTION":  "REPLACE_VM",
		"ERROR_CODE":          "link_downed",
		"EVENT_ID":            e.ID,
		"EVENT_KIND":          "counter-breach",
		"NODE_NAME":           "gpu-node-7",
		"PROCESSING_STRATEGY": "EXECUTE_REMEDIATION",
		"GENERATED_TIMESTAMP": "2025-03-04T05:06:07.89Z",
		"AGENT":               "nic-health-monitor",
		"COMPONENT_CLASS":     "NIC",
		"EVENT_VERSION":       "1",
		"COUNTER":             "link_downed",
		"VALUE":               "1",
		"DELTA":               "1",
		"RATE":                "0.20",
		"THRESHOLD":           "0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s=%q", k, got[k])
		}
		if !validName.MatchString(k) {
			t.Errorf("field name %q is not valid for journald", k)
		}
	}
}

func TestJournal_3_CheckScopedEventHasNoEntityFields(t *testing.T) {
	e := event.New(event.Spec{Kind: event.KindCheckCleared, CheckName: event.InfiniBandStateCheck, IsHealthy: true,
		Message: "InfiniBandStateCheck: node rebooted, clearing earlier findings"}, stamp)
	f := Fields(e)
	for _, k := range []string{FieldDevice, FieldPort, FieldCard, FieldErrorCode} {
		if v, ok := f[k]; ok {
			t.Errorf("check-scoped event has %s=%q", k, v)
		}
	}
	if f[FieldIsHealthy] != "true" || f[FieldMessageID] != MessageIDCheckCleared {
		t.Errorf("fields %v", f)
	}
}

func TestJournal_3_MetadataKeysSanitisedWithoutLoss(t *testing.T) {
	e := portFatal()
	e.ErrorCode = []string{"a", "b"}
	e.Metadata = map[string]string{
		"lostBandwidthGbps":          "12.5",
		"pci.width":                  "x8",
		"pci_width":                  "x16", // sanitises to the same name
		"priority":                   "7",   // must not set PRIORITY
		"nic_device":                 "mlx5_9",
		"_private":                   "p",
		"9lives":                     "cat",
		"!!!":                        "dropped",
		strings.Repeat("k", 80):      "long",
		"message_id":                 "not-an-id",
		"Syslog-Identifier":          "other",
		"counter":                    "port_rcv_errors",
		"value with\nnewline inside": "v",
	}
	f := Fields(e)
	want := map[string]string{
		"LOSTBANDWIDTHGBPS":         "12.5",
		"PCI_WIDTH":                 "x8",
		"PCI_WIDTH_2":               "x16",
		"META_PRIORITY":             "7",
		"META_NIC_DEVICE":           "mlx5_9",
		"PRIVATE":                   "p",
		"META_9LIVES":               "cat",
		strings.Repeat("K", 64):     "long",
		"META_MESSAGE_ID":           "not-an-id",
		"META_SYSLOG_IDENTIFIER":    "other",
		"COUNTER":                   "port_rcv_errors",
		"VALUE_WITH_NEWLINE_INSIDE": "v",
		"ERROR_CODE":                "a,b",
		"NIC_DEVICE":                "mlx5_0",
		"MESSAGE_ID":                MessageIDPortFatal,
		"SYSLOG_IDENTIFIER":         "nichealthd",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
	for k := range f {
		if !validName.MatchString(k) {
			t.Errorf("field name %q is not valid for journald", k)
		}
		if k == "PRIORITY" || k == "MESSAGE" {
			t.Errorf("metadata produced %s", k)
		}
	}
	// 17 fixed fields (a card is metadata "card" now, not a NICCard entity).
	if len(f) != 17+len(e.Metadata)-1 {
		t.Errorf("%d fields, want every metadata key but the unusable one kept: %v", len(f), f)
	}
}

func TestJournal_FieldName(t *testing.T) {
	tests := map[string]string{
		"counter":          "COUNTER",
		"lostBandwidthPct": "LOSTBANDWIDTHPCT",
		"pci.link-speed":   "PCI_LINK_SPEED",
		"__x":              "X",
		"7":                "META_7",
		"":                 "",
		"___":              "",
		"-.-":              "",
		"ÄÖ":               "",
		"a b":              "A_B",
		"Z9_":              "Z9_",
	}
	for in, want := range tests {
		if got := FieldName(in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever a check puts in metadata, the field name is one journald
// accepts, or empty.
func FuzzFieldName(f *testing.F) {
	for _, s := range []string{"counter", "_x", "9", "", "a.b-c", strings.Repeat("x", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		name := FieldName(key)
		if name != "" && !validName.MatchString(name) {
			t.Fatalf("FieldName(%q) = %q: not a valid journal field name", key, name)
		}
		fields := Fields(event.Event{Kind: event.KindPortFatal, Metadata: map[string]string{key: "v", key + "x": "w"}})
		for k := range fields {
			if !validName.MatchString(k) || k == "PRIORITY" || k == "MESSAGE" {
				t.Fatalf("metadata key %q produced field %q", key, k)
			}
		}
	})
}
