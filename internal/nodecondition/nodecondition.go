package nodecondition

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Event is what the rule reads of an NVSentinel HealthEvent.
type Event struct {
	CheckName         string
	IsFatal           bool
	IsHealthy         bool
	Message           string
	RecommendedAction string // the enum's name, e.g. "REPLACE_VM"
	ErrorCode         []string
	Entities          []Entity
	Timestamp         time.Time
	// StoreOnly: processingStrategy STORE_ONLY or STORE_AND_ANALYSE; such
	// events make no node condition (filterProcessableEvents).
	StoreOnly bool
}

// Entity is one entityImpacted.
type Entity struct{ Type, Value string }

// Node is the node conditions NVSentinel holds for one node: by check
// name, the messages of the fatal events not yet cleared.
type Node struct {
	byCheck map[string][]string
}

// New returns a node with no condition.
func New() *Node { return &Node{byCheck: map[string][]string{}} }

// Apply folds one batch of events (one HealthEventOccurredV1 call) into
// the node's conditions, as updateNodeConditions does: events sorted by
// timestamp, grouped by check name, each group aggregated in order.
func (n *Node) Apply(batch ...Event) {
	var evs []Event
	for _, e := range batch {
		if !e.StoreOnly {
			evs = append(evs, e)
		}
	}
	// sortHealthEventsByTimestamp. Its sort need not keep the order of
	// equal timestamps; a stable sort here is the kindest reading of it
	// (the daemon stamps a commit's events a nanosecond apart).
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Timestamp.Before(evs[j].Timestamp) })
	groups := map[string][]Event{}
	var order []string
	for _, e := range evs {
		// buildConditionEventsMap: non-fatal unhealthy events make no
		// node condition (they become Kubernetes events only).
		if !e.IsHealthy && !e.IsFatal {
			continue
		}
		if _, ok := groups[e.CheckName]; !ok {
			order = append(order, e.CheckName)
		}
		groups[e.CheckName] = append(groups[e.CheckName], e)
	}
	for _, check := range order {
		n.byCheck[check] = aggregate(n.byCheck[check], groups[check])
	}
}

// aggregate is aggregateEventMessages.
func aggregate(messages []string, events []Event) []string {
	for _, e := range events {
		switch {
		case !e.IsHealthy:
			messages = addIfNotExist(messages, Message(e))
		case len(e.Entities) > 0:
			messages = removeScoped(messages, e.Entities, e.ErrorCode)
		default:
			messages = nil
		}
	}
	return messages
}

func addIfNotExist(messages []string, m string) []string {
	if slices.Contains(messages, m) {
		return messages
	}
	return append(messages, m)
}

// removeScoped is removeImpactedEntitiesMessagesScoped: a message goes
// when it mentions every entity and, if errorCodes is not empty, one of
// them.
func removeScoped(messages []string, entities []Entity, errorCodes []string) []string {
	var out []string
	for _, m := range messages {
		if entitiesMatch(m, entities) && anyErrorCode(m, errorCodes) {
			continue
		}
		out = append(out, m)
	}
	return out
}

func entitiesMatch(m string, entities []Entity) bool {
	if len(entities) == 0 {
		return false
	}
	for _, e := range entities {
		if !strings.Contains(m, fmt.Sprintf("%s:%s ", e.Type, e.Value)) {
			return false
		}
	}
	return true
}

func anyErrorCode(m string, codes []string) bool {
	if len(codes) == 0 {
		return true
	}
	for _, c := range codes {
		if strings.Contains(m, fmt.Sprintf("ErrorCode:%s ", c)) {
			return true
		}
	}
	return false
}

// Message is constructHealthEventMessage without its trailing ";": the
// error codes, the entities, the message (";" made ".") and the action.
func Message(e Event) string {
	var b strings.Builder
	for _, c := range e.ErrorCode {
		fmt.Fprintf(&b, "ErrorCode:%s ", c)
	}
	for _, en := range e.Entities {
		fmt.Fprintf(&b, "%s:%s ", en.Type, en.Value)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, "%s ", strings.ReplaceAll(e.Message, ";", "."))
	}
	fmt.Fprintf(&b, "Recommended Action=%s", e.RecommendedAction)
	return b.String()
}

// Messages returns the messages of check's condition, sorted; none when
// the condition is healthy ("No Health Failures").
func (n *Node) Messages(check string) []string {
	out := slices.Clone(n.byCheck[check])
	slices.Sort(out)
	return out
}

// Checks lists the check names with an unhealthy condition, sorted.
func (n *Node) Checks() []string {
	var out []string
	for c, ms := range n.byCheck {
		if len(ms) > 0 {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
