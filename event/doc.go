// Package event is the one health-event model every part of nichealthd
// speaks: checks build events with New, the outbox stores them, and each
// sink (journal, JSON lines, platform connector, D-Bus) renders the same
// struct. It mirrors NVSentinel's HealthEvent so a receiver keyed on that
// schema needs no translation.
package event
