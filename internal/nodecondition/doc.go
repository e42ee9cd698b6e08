// Package nodecondition is a small Go port of the rule by which NVSentinel's
// platform connector folds health events into Kubernetes node conditions,
// so tests can replay the daemon's event stream and ask what NVSentinel
// would hold (DESIGN.md difference 13). It ports, from NVIDIA/NVSentinel
// platform-connectors/pkg/connectors/kubernetes/process_node_events.go:
// buildConditionEventsMap (one condition per check name, non-fatal unhealthy
// events ignored), sortHealthEventsByTimestamp, aggregateEventMessages (a
// fatal event adds its message unless present; a healthy event with
// entities removes, with removeImpactedEntitiesMessagesScoped, every
// message that mentions all of its entities and, when it carries error
// codes, one of them; a healthy event without entities clears the
// condition) and constructHealthEventMessage. Truncation and compaction of
// long condition messages are left out: they keep the identity tokens the
// rule matches on. It is test support and imports nothing of the project.
package nodecondition
