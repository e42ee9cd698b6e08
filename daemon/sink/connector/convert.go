package connector

import (
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nichealth/nichealthd/daemon/sink/connector/pb"
	"github.com/nichealth/nichealthd/event"
)

// KindMetadataKey carries the event's kind, which HealthEvent has no field
// for, so a consumer of the platform's store can filter on it as operators
// filter the journal on MESSAGE_ID.
const KindMetadataKey = "nichealth.kind"

// ToProto converts one event to the wire message. Every field of the event
// is carried: ID in id (17), kind in metadata[nichealth.kind]. nodeName is
// used when the event has none (events from the outbox keep the name they
// were stamped with). Strings are made valid UTF-8, because proto3 refuses
// to marshal anything else and one odd byte from sysfs must not make a
// batch undeliverable forever.
func ToProto(e *event.Event, nodeName string) *pb.HealthEvent {
	version := e.Version
	if version == 0 {
		version = event.SchemaVersion
	}
	node := e.NodeName
	if node == "" {
		node = nodeName
	}
	out := &pb.HealthEvent{
		Version:            version,
		Agent:              utf8(e.Agent),
		ComponentClass:     utf8(e.ComponentClass),
		CheckName:          utf8(e.CheckName),
		IsFatal:            e.IsFatal,
		IsHealthy:          e.IsHealthy,
		Message:            utf8(e.Message),
		RecommendedAction:  pb.RecommendedAction(e.RecommendedAction),
		NodeName:           utf8(node),
		ProcessingStrategy: pb.ProcessingStrategy(e.ProcessingStrategy),
		Id:                 utf8(e.ID),
	}
	if len(e.ErrorCode) > 0 {
		out.ErrorCode = make([]string, len(e.ErrorCode))
		for i, c := range e.ErrorCode {
			out.ErrorCode[i] = utf8(c)
		}
	}
	if len(e.EntitiesImpacted) > 0 {
		out.EntitiesImpacted = make([]*pb.Entity, len(e.EntitiesImpacted))
		for i, en := range e.EntitiesImpacted {
			out.EntitiesImpacted[i] = &pb.Entity{EntityType: utf8(en.Type), EntityValue: utf8(en.Value)}
		}
	}
	if len(e.Metadata) > 0 || e.Kind != "" {
		out.Metadata = make(map[string]string, len(e.Metadata)+1)
		for k, v := range e.Metadata {
			out.Metadata[utf8(k)] = utf8(v)
		}
		if e.Kind != "" {
			out.Metadata[KindMetadataKey] = utf8(string(e.Kind))
		}
	}
	if !e.GeneratedTimestamp.IsZero() {
		out.GeneratedTimestamp = timestamppb.New(e.GeneratedTimestamp)
	}
	return out
}

func utf8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
