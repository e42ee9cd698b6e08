// Package connector delivers events to NVSentinel's platform connector:
// gRPC over its unix socket, wire-compatible with its datamodels.
// PlatformConnector service (schema in pb/health_event.proto, DESIGN.md
// section 3). It implements daemon/sink.Sink and does not buffer: the
// outbox keeps events until Send returns nil.
//
// Call pattern the sink expects from the outbox drainer (seed
// link-counter-detection section 11.2): fatal and recovery events
// (event.Urgent) are sent at once, alone or with whatever else is due;
// non-fatal events may wait a short interval and go together. Each Send is
// exactly one HealthEventOccurredV1 call carrying the whole batch; keep
// batches to at most MaxBatch events so one call stays far below gRPC's
// 4 MiB message limit. Retry transient errors with backoff; move past
// Permanent ones (they will not succeed by resending).
package connector
