package event

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/event/condition"
)

// Agent and ComponentClass are fixed for every event this daemon emits;
// NVSentinel routes on them.
const (
	Agent          = "nic-health-monitor"
	ComponentClass = "NIC"
	SchemaVersion  = 1
)

// Check names, as NVSentinel's nic-health-monitor names them.
const (
	InfiniBandStateCheck       = "InfiniBandStateCheck"
	EthernetStateCheck         = "EthernetStateCheck"
	InfiniBandDegradationCheck = "InfiniBandDegradationCheck"
	EthernetDegradationCheck   = "EthernetDegradationCheck"
)

// Entity types of seed section 11.2, and the daemon's own check: a check
// disabled by a panic is the entity of its check-failed condition, so the
// healthy event that clears it names it and clears nothing else of that
// check in a consumer that keys messages by entity (DESIGN.md
// difference 13).
const (
	EntityNIC     = "NIC"
	EntityNICPort = "NICPort"
	EntityCard    = "NICCard"
	EntityCheck   = "NICHealthCheck"
	// EntityPCI is a NIC's PCI function when it has no RDMA device to name
	// it (unbound, failed probe, gone from the bus), EntityNICGroup a role
	// group of NICs ("compute"): what an inventory condition is about, so
	// that its clear carries entities and never reads as a check-scoped
	// clear of everything its check said.
	EntityPCI      = "PCI"
	EntityNICGroup = "NICGroup"
	// EntityKernelLog names the kernel-log pattern of a node-level
	// condition that no NIC can be named for (a soft lockup in the mlx5
	// NAPI poll): its clear must carry an entity, since a healthy event
	// without one clears the whole check (DESIGN.md difference 13).
	EntityKernelLog = "KernelLogPattern"
)

// Kind says what happened, independently of the check that saw it. It picks
// the journal MESSAGE_ID and lets operators filter without parsing messages.
type Kind string

const (
	KindPortFatal        Kind = "port-fatal"
	KindPortNonFatal     Kind = "port-nonfatal"
	KindPortRecovered    Kind = "port-recovered"
	KindPortBaseline     Kind = "port-baseline"
	KindCounterBreach    Kind = "counter-breach"
	KindCounterRecovered Kind = "counter-recovered"
	KindCounterBaseline  Kind = "counter-baseline"
	// A classic PMA counter stuck at its field's maximum can no longer
	// show an error: a non-fatal loss of visibility, cleared when the
	// counter moves again.
	KindCounterSaturated   Kind = "counter-saturated"
	KindCounterUnsaturated Kind = "counter-unsaturated"
	// port_xmit_wait's lost bandwidth above its share of the port rate: a
	// non-fatal congestion condition, cleared below half of it.
	KindCongestion        Kind = "congestion"
	KindCongestionCleared Kind = "congestion-cleared"
	KindDeviceDisappeared Kind = "device-disappeared"
	KindDeviceReappeared  Kind = "device-reappeared"
	KindCardAnomaly       Kind = "card-anomaly"
	KindCardRecovered     Kind = "card-recovered"
	// Every IB port of a role group waiting for a subnet manager.
	KindNoSubnetManager    Kind = "no-subnet-manager"
	KindSubnetManagerFound Kind = "subnet-manager-found"
	KindCheckCleared       Kind = "check-cleared"
	KindReadStuck          Kind = "read-stuck"
	KindReadRecovered      Kind = "read-recovered"
	KindLinkSanity         Kind = "link-sanity"
	KindLinkSanityOK       Kind = "link-sanity-ok"
	// Node-local analyzer rules (flap, drop, repeated degradation).
	KindRuleRaised  Kind = "rule-raised"
	KindRuleCleared Kind = "rule-cleared"
	// A file failing with EINVAL/EIO/EOPNOTSUPP/EACCES/EPERM is parked
	// (not read each poll) and resumes when it reads again.
	KindReadParked  Kind = "read-parked"
	KindReadResumed Kind = "read-resumed"
	// PCIe AER errors on a PCI function of a NIC's path (metadata "pci").
	KindPCIeAER          Kind = "pcie-aer"
	KindPCIeAERRecovered Kind = "pcie-aer-recovered"
	// The kernel's own words: a kernel log record matched a pattern
	// (metadata "pattern", "pci"), and its clear.
	KindKernelLog        Kind = "kernel-log"
	KindKernelLogCleared Kind = "kernel-log-cleared"
	// A check (or sink) disabled by a panic in its own code until the next
	// reload or restart: the node is not healthy while part of it is not
	// watched (metadata "check"). Cleared when the check runs again.
	KindCheckFailed  Kind = "check-failed"
	KindCheckResumed Kind = "check-resumed"
	// The PCI inventory (checks/inventory, metadata "pci"): a NIC function
	// present without a usable RDMA device (unbound, another driver, no
	// RDMA device), one monitored last boot and gone from the bus now, and
	// the clear of either; firmware drift among the cards of one PSID, or
	// a card swapped for another PSID (on the card), and its clear; fewer
	// active compute ports than expected and its clear.
	KindFunctionFailed Kind = "nic-function-failed"
	KindFunctionAbsent Kind = "nic-function-absent"
	KindFunctionOK     Kind = "nic-function-ok"
	KindDrift          Kind = "nic-drift"
	KindDriftOK        Kind = "nic-drift-ok"
	KindPortsShort     Kind = "compute-ports-short"
	KindPortsOK        Kind = "compute-ports-ok"
	// The far end of a cable (DESIGN.md section 13): a counter of the
	// switch port at the other end breached its threshold, and its clear;
	// one of its fields is stuck at its maximum (visibility lost), and its
	// clear; the far end cannot be read (the MAD helper crashed or hung),
	// and its clear.
	KindPeerBreach      Kind = "peer-breach"
	KindPeerRecovered   Kind = "peer-recovered"
	KindPeerSaturated   Kind = "peer-saturated"
	KindPeerUnsaturated Kind = "peer-unsaturated"
	KindFarEndLost      Kind = "far-end-lost"
	KindFarEndRestored  Kind = "far-end-restored"
	// The link's own story (DESIGN.md section 7): a RoCE port's transceiver
	// past its own thresholds, or with a latched loss of signal or lock
	// (metadata "finding", "lane", "value", "threshold", "serial"), and its
	// clear; a NIC function's devlink health reporter in error or reporting
	// errors, or firmware flashed but not activated (metadata "pci",
	// "finding"), and its clear.
	KindTransceiver      Kind = "transceiver"
	KindTransceiverOK    Kind = "transceiver-ok"
	KindFirmwareHealth   Kind = "firmware-health"
	KindFirmwareHealthOK Kind = "firmware-health-ok"
	// RoCE congestion and loss (DESIGN.md section 16): a RoCE port in a
	// non-fatal class (roce-lossy, roce-rx-starved, roce-pause-storm: the
	// error code; metadata "class", "evidence", "reason", "fix"), and its
	// clear.
	KindRoCE        Kind = "roce"
	KindRoCECleared Kind = "roce-cleared"
)

// Kinds lists every kind, in a stable order, for catalogs and docs.
var Kinds = []Kind{
	KindPortFatal, KindPortNonFatal, KindPortRecovered, KindPortBaseline,
	KindCounterBreach, KindCounterRecovered, KindCounterBaseline, KindCounterSaturated,
	KindDeviceDisappeared, KindDeviceReappeared, KindCardAnomaly, KindCardRecovered,
	KindCheckCleared, KindReadStuck, KindReadRecovered, KindLinkSanity, KindLinkSanityOK, KindRuleRaised, KindRuleCleared,
	KindReadParked, KindReadResumed,
	KindPCIeAER, KindPCIeAERRecovered,
	KindCheckFailed, KindCheckResumed,
	KindCounterUnsaturated, KindCongestion, KindCongestionCleared, KindNoSubnetManager, KindSubnetManagerFound,
	KindFunctionFailed, KindFunctionAbsent, KindFunctionOK, KindDrift, KindDriftOK, KindPortsShort, KindPortsOK,
	KindKernelLog, KindKernelLogCleared,
	KindPeerBreach, KindPeerRecovered, KindPeerSaturated, KindPeerUnsaturated, KindFarEndLost, KindFarEndRestored,
	KindTransceiver, KindTransceiverOK, KindFirmwareHealth, KindFirmwareHealthOK,
	KindRoCE, KindRoCECleared,
}

// RecommendedAction is NVSentinel's enum; the numbers are wire values.
type RecommendedAction int32

const (
	ActionNone           RecommendedAction = 0
	ActionComponentReset RecommendedAction = 2
	ActionContactSupport RecommendedAction = 5
	ActionRunFieldDiag   RecommendedAction = 6
	ActionRestartVM      RecommendedAction = 15
	ActionRestartBM      RecommendedAction = 24
	ActionReplaceVM      RecommendedAction = 25
	ActionRunDCGMEUD     RecommendedAction = 26
	ActionCustom         RecommendedAction = 27
	ActionUnknown        RecommendedAction = 99
)

var actionNames = map[RecommendedAction]string{
	ActionNone: "NONE", ActionComponentReset: "COMPONENT_RESET", ActionContactSupport: "CONTACT_SUPPORT",
	ActionRunFieldDiag: "RUN_FIELDDIAG", ActionRestartVM: "RESTART_VM", ActionRestartBM: "RESTART_BM",
	ActionReplaceVM: "REPLACE_VM", ActionRunDCGMEUD: "RUN_DCGMEUD", ActionCustom: "CUSTOM", ActionUnknown: "UNKNOWN",
}

func (a RecommendedAction) String() string {
	if s, ok := actionNames[a]; ok {
		return s
	}
	return fmt.Sprintf("RecommendedAction(%d)", int32(a))
}

// ParseRecommendedAction accepts the enum name.
func ParseRecommendedAction(s string) (RecommendedAction, error) {
	for a, n := range actionNames {
		if n == s {
			return a, nil
		}
	}
	return ActionUnknown, fmt.Errorf("unknown recommended action %q", s)
}

func (a RecommendedAction) MarshalJSON() ([]byte, error) { return json.Marshal(a.String()) }

func (a *RecommendedAction) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int32
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("recommendedAction: %w", err)
		}
		*a = RecommendedAction(n)
		return nil
	}
	v, err := ParseRecommendedAction(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// ProcessingStrategy is NVSentinel's enum; the numbers are wire values.
type ProcessingStrategy int32

const (
	StrategyUnspecified        ProcessingStrategy = 0
	StrategyExecuteRemediation ProcessingStrategy = 1
	StrategyStoreOnly          ProcessingStrategy = 2
	StrategyStoreAndAnalyse    ProcessingStrategy = 3
)

var strategyNames = map[ProcessingStrategy]string{
	StrategyUnspecified: "UNSPECIFIED", StrategyExecuteRemediation: "EXECUTE_REMEDIATION",
	StrategyStoreOnly: "STORE_ONLY", StrategyStoreAndAnalyse: "STORE_AND_ANALYSE",
}

func (p ProcessingStrategy) String() string {
	if s, ok := strategyNames[p]; ok {
		return s
	}
	return fmt.Sprintf("ProcessingStrategy(%d)", int32(p))
}

// ParseProcessingStrategy accepts the enum name (as the --processing-strategy flag does).
func ParseProcessingStrategy(s string) (ProcessingStrategy, error) {
	for p, n := range strategyNames {
		if n == s {
			return p, nil
		}
	}
	return StrategyUnspecified, fmt.Errorf("unknown processing strategy %q (use EXECUTE_REMEDIATION, STORE_ONLY or STORE_AND_ANALYSE)", s)
}

func (p ProcessingStrategy) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

func (p *ProcessingStrategy) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int32
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("processingStrategy: %w", err)
		}
		*p = ProcessingStrategy(n)
		return nil
	}
	v, err := ParseProcessingStrategy(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Entity names one impacted component.
type Entity struct {
	Type  string `json:"entityType"`
	Value string `json:"entityValue"`
}

// Event is one health boundary crossing. JSON field names are the
// protojson names of NVSentinel's HealthEvent (DESIGN.md section 3), plus
// kind, which is ours.
type Event struct {
	ID                 string             `json:"id"`
	Version            uint32             `json:"version"`
	Agent              string             `json:"agent"`
	ComponentClass     string             `json:"componentClass"`
	CheckName          string             `json:"checkName"`
	IsFatal            bool               `json:"isFatal"`
	IsHealthy          bool               `json:"isHealthy"`
	Message            string             `json:"message"`
	RecommendedAction  RecommendedAction  `json:"recommendedAction"`
	ErrorCode          []string           `json:"errorCode,omitempty"`
	EntitiesImpacted   []Entity           `json:"entitiesImpacted"`
	Metadata           map[string]string  `json:"metadata,omitempty"`
	GeneratedTimestamp time.Time          `json:"generatedTimestamp"`
	NodeName           string             `json:"nodeName"`
	ProcessingStrategy ProcessingStrategy `json:"processingStrategy"`
	Kind               Kind               `json:"kind,omitempty"`
	// Condition is the key the check set (KeyOf reads it). It is not part
	// of the wire format: the outbox keeps it beside the event.
	Condition condition.Key `json:"-"`
}

// Spec is what a check decides; New turns it into an Event. Keeping the
// constructor in one place means every sink sees the same defaults.
type Spec struct {
	Kind      Kind
	CheckName string
	IsFatal   bool
	IsHealthy bool
	Message   string
	// Action defaults to REPLACE_VM for fatal events and NONE otherwise.
	Action    *RecommendedAction
	ErrorCode []string
	Device    string // NIC entity; empty for check-scoped events
	Port      int    // NICPort entity when > 0
	Card      string // the card (PCI bus:device) of a card event, as metadata "card"
	// Ports are further (NIC, NICPort) entity pairs: the ports a card
	// event is about.
	Ports []PortRef
	// Check names the daemon's own check as the entity (EntityCheck) of a
	// check-failed or check-resumed event.
	Check string
	// Entities are further entities (EntityPCI, EntityNICGroup), after
	// the ports.
	Entities []Entity
	Metadata map[string]string
	// Condition is what the event raises or clears, with CheckName its
	// key: the one identity the health model and the outbox's fold use.
	Condition condition.Entity
}

// PortRef names one port.
type PortRef struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
}

// Stamp carries what the daemon, not the check, knows.
type Stamp struct {
	NodeName string
	Strategy ProcessingStrategy
	Now      time.Time
}

// New builds an event with a fresh unique ID. The ID is generated once and
// travels with the event through the outbox, so a sink that resends after a
// crash resends the same ID and a receiver can drop the duplicate.
func New(s Spec, st Stamp) Event {
	action := ActionNone
	if s.IsFatal && !s.IsHealthy {
		action = ActionReplaceVM
	}
	if s.Action != nil {
		action = *s.Action
	}
	var ents []Entity
	if s.Device != "" {
		ents = append(ents, Entity{Type: EntityNIC, Value: name(s.Device)})
	}
	if s.Port > 0 {
		ents = append(ents, Entity{Type: EntityNICPort, Value: fmt.Sprint(s.Port)})
	}
	ports := s.Ports
	if room := (MaxEntities - len(ents)) / 2; len(ports) > room {
		ports = ports[:room]
	}
	for _, p := range ports {
		// Seed 11.2 knows NIC and NICPort entities only: a card event names
		// the ports it is about that way, and its card in metadata.
		ents = append(ents, Entity{Type: EntityNIC, Value: name(p.Device)}, Entity{Type: EntityNICPort, Value: fmt.Sprint(p.Port)})
	}
	if s.Check != "" {
		ents = append(ents, Entity{Type: EntityCheck, Value: Clean(s.Check)})
	}
	for _, en := range s.Entities {
		ents = append(ents, Entity{Type: Clean(en.Type), Value: Clean(en.Value)})
	}
	if ents == nil {
		ents = []Entity{}
	}
	md := boundMetadata(cleanMap(s.Metadata))
	if s.Card != "" || len(ports) < len(s.Ports) {
		// Set after the bound, so that neither is ever left out.
		out := make(map[string]string, len(md)+2)
		for k, v := range md {
			out[k] = v
		}
		if s.Card != "" {
			out["card"] = name(s.Card)
		}
		if len(ports) < len(s.Ports) {
			out["portsLeftOut"] = fmt.Sprint(len(s.Ports) - len(ports))
		}
		md = out
	}
	return Event{
		ID:                 NewID(),
		Version:            SchemaVersion,
		Agent:              Agent,
		ComponentClass:     ComponentClass,
		CheckName:          name(s.CheckName),
		IsFatal:            s.IsFatal && !s.IsHealthy,
		IsHealthy:          s.IsHealthy,
		Message:            Truncate(Clean(s.Message), MaxMessageBytes),
		RecommendedAction:  action,
		ErrorCode:          boundStrings(CleanAll(slices.Clone(s.ErrorCode)), MaxErrorCodes, MaxErrorBytes),
		EntitiesImpacted:   ents,
		Metadata:           md,
		GeneratedTimestamp: st.Now.UTC(),
		NodeName:           name(st.NodeName),
		ProcessingStrategy: st.Strategy,
		Kind:               s.Kind,
		Condition:          keyOf(s.CheckName, s.Condition),
	}
}

// name is a cleaned, bounded identifier.
func name(s string) string { return Truncate(Clean(s), MaxNameBytes) }

// NewID returns 128 random bits in hex.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on Linux ≥ 3.17 (getrandom); a panic here
		// would mean the kernel itself is broken.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// Device returns the NIC entity value, or "".
func (e *Event) Device() string { return e.entity(EntityNIC) }

// Port returns the NICPort entity value, or "".
func (e *Event) Port() string { return e.entity(EntityNICPort) }

// Ports lists the (NIC, NICPort) entity pairs of the event, in order: a
// card-level event names the ports it covers that way (seed 11.2), each
// NICPort after the NIC it belongs to.
func (e *Event) Ports() []PortRef {
	var out []PortRef
	dev := ""
	for _, en := range e.EntitiesImpacted {
		switch en.Type {
		case EntityNIC:
			dev = en.Value
		case EntityNICPort:
			if p, err := strconv.Atoi(en.Value); err == nil && dev != "" {
				out = append(out, PortRef{Device: dev, Port: p})
			}
		}
	}
	return out
}

func (e *Event) entity(t string) string {
	for _, en := range e.EntitiesImpacted {
		if en.Type == t {
			return en.Value
		}
	}
	return ""
}

// Urgent reports whether seed section 11.2 wants the event dispatched at
// once (fatal or recovery) rather than batched.
func (e *Event) Urgent() bool { return e.IsFatal || e.IsHealthy }
