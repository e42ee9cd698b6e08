package journal

import (
	"sort"
	"strconv"
	"strings"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"

	"github.com/nichealth/nichealthd/event"
)

// SyslogIdentifier tags every entry, so `journalctl -t nichealthd` finds
// events and logs alike, also when the daemon runs outside its unit.
const SyslogIdentifier = "nichealthd"

// Journal field names of an event. NIC_* name the impacted entities; the
// rest mirror the event's fields. They are part of the operator interface
// (queries, catalog substitutions), so they do not change.
const (
	FieldMessageID          = "MESSAGE_ID"
	FieldSyslogIdentifier   = "SYSLOG_IDENTIFIER"
	FieldDevice             = "NIC_DEVICE"
	FieldPort               = "NIC_PORT"
	FieldCard               = "NIC_CARD"
	FieldCheckName          = "CHECK_NAME"
	FieldIsFatal            = "IS_FATAL"
	FieldIsHealthy          = "IS_HEALTHY"
	FieldRecommendedAction  = "RECOMMENDED_ACTION"
	FieldErrorCode          = "ERROR_CODE"
	FieldEventID            = "EVENT_ID"
	FieldEventKind          = "EVENT_KIND"
	FieldNodeName           = "NODE_NAME"
	FieldProcessingStrategy = "PROCESSING_STRATEGY"
	FieldGeneratedTimestamp = "GENERATED_TIMESTAMP"
	FieldAgent              = "AGENT"
	FieldComponentClass     = "COMPONENT_CLASS"
	FieldVersion            = "EVENT_VERSION"
)

// MetadataPrefix is put in front of a metadata key whose field name would
// clash with a field the journal or this package gives a meaning to (a
// metadata key "priority" must not set the entry's PRIORITY).
const MetadataPrefix = "META_"

// maxFieldName is journald's limit on field names; longer ones are dropped.
const maxFieldName = 64

// isJournalReserved reports names journald or journalctl interpret
// (systemd.journal-fields(7)); neither metadata nor log attributes may set
// them.
func isJournalReserved(name string) bool {
	switch name {
	case "MESSAGE", "MESSAGE_ID", "PRIORITY", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "ERRNO",
		"INVOCATION_ID", "USER_INVOCATION_ID", "SYSLOG_FACILITY", "SYSLOG_IDENTIFIER", "SYSLOG_PID",
		"SYSLOG_TIMESTAMP", "SYSLOG_RAW", "DOCUMENTATION", "TID", "UNIT", "USER_UNIT", "OBJECT_PID":
		return true
	}
	return false
}

// isEventField reports the names Fields gives an event's own fields.
func isEventField(name string) bool {
	switch name {
	case FieldDevice, FieldPort, FieldCard, FieldCheckName, FieldIsFatal, FieldIsHealthy,
		FieldRecommendedAction, FieldErrorCode, FieldEventID, FieldEventKind, FieldNodeName,
		FieldProcessingStrategy, FieldGeneratedTimestamp, FieldAgent, FieldComponentClass, FieldVersion:
		return true
	}
	return false
}

// FieldName turns an arbitrary key into a valid journal field name:
// upper-case, [A-Z0-9_] only (anything else becomes '_'), no leading '_'
// (those are trusted fields journald sets itself) or digit (prefixed with
// META_), at most 64 bytes. It returns "" for a key with nothing usable.
// Two keys can map to one name; Fields resolves that.
func FieldName(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.TrimLeft(b.String(), "_")
	if strings.Trim(name, "_") == "" {
		return ""
	}
	if name[0] >= '0' && name[0] <= '9' {
		name = MetadataPrefix + name
	}
	return truncate(name, maxFieldName)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Priority maps an event to a syslog priority, so `journalctl -p` filters
// by how bad it is:
//
//	crit (2)    fatal port, device or card findings: the workload fails;
//	err (3)     fatal counter breaches (the link is up but losing traffic
//	            for good) and stuck sysfs reads (the daemon is partly blind);
//	warning (4) non-fatal degradation;
//	notice (5)  healthy, recovery and baseline events.
func Priority(e event.Event) sdjournal.Priority {
	switch {
	case e.Kind == event.KindReadStuck:
		return sdjournal.PriErr
	case e.IsHealthy:
		return sdjournal.PriNotice
	case e.IsFatal && (e.Kind == event.KindCounterBreach || e.Kind == event.KindCounterSaturated):
		return sdjournal.PriErr
	case e.IsFatal:
		return sdjournal.PriCrit
	default:
		return sdjournal.PriWarning
	}
}

// Fields returns every journal field of the entry for e except MESSAGE and
// PRIORITY (the writer's own arguments). Empty values are left out, so a
// check-scoped event has no NIC_DEVICE rather than an empty one.
func Fields(e event.Event) map[string]string {
	f := make(map[string]string, 20+len(e.Metadata))
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	if id, ok := MessageID(e.Kind); ok {
		f[FieldMessageID] = id
	}
	f[FieldSyslogIdentifier] = SyslogIdentifier
	for _, en := range e.EntitiesImpacted {
		switch en.Type {
		case event.EntityNIC:
			set(FieldDevice, en.Value)
		case event.EntityNICPort:
			set(FieldPort, en.Value)
		case event.EntityCard:
			set(FieldCard, en.Value)
		}
	}
	set(FieldCheckName, e.CheckName)
	f[FieldIsFatal] = strconv.FormatBool(e.IsFatal)
	f[FieldIsHealthy] = strconv.FormatBool(e.IsHealthy)
	f[FieldRecommendedAction] = e.RecommendedAction.String()
	// One value per field keeps `journalctl ERROR_CODE=link_downed` exact
	// for the usual single code; several codes are comma-joined.
	set(FieldErrorCode, strings.Join(e.ErrorCode, ","))
	set(FieldEventID, e.ID)
	set(FieldEventKind, string(e.Kind))
	set(FieldNodeName, e.NodeName)
	f[FieldProcessingStrategy] = e.ProcessingStrategy.String()
	if !e.GeneratedTimestamp.IsZero() {
		f[FieldGeneratedTimestamp] = e.GeneratedTimestamp.UTC().Format(time.RFC3339Nano)
	}
	set(FieldAgent, e.Agent)
	set(FieldComponentClass, e.ComponentClass)
	if e.Version != 0 {
		f[FieldVersion] = strconv.FormatUint(uint64(e.Version), 10)
	}
	addMetadata(f, e.Metadata)
	return f
}

// addMetadata adds each metadata key as its own field. Keys are visited in
// sorted order so that collisions resolve the same way every time: a
// reserved name gets META_, and a name already taken gets _2, _3, ...
// Nothing is dropped except keys with no usable character.
func addMetadata(f map[string]string, md map[string]string) {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := FieldName(k)
		if name == "" {
			continue
		}
		if isJournalReserved(name) || isEventField(name) {
			name = truncate(MetadataPrefix+name, maxFieldName)
		}
		putUnique(f, name, md[k])
	}
}

// putUnique sets f[name], or f[name_2], f[name_3], ... when taken, so that
// two keys that sanitise to one name both survive.
func putUnique(f map[string]string, name, val string) {
	if _, taken := f[name]; taken {
		for i := 2; ; i++ {
			suffix := "_" + strconv.Itoa(i)
			cand := truncate(name, maxFieldName-len(suffix)) + suffix
			if _, taken := f[cand]; !taken {
				name = cand
				break
			}
		}
	}
	f[name] = val
}
