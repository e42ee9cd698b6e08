// Package health is the one verdict of a node (DESIGN.md section 9): the
// set of active conditions, each keyed by the check that raised it and the
// entity it is about, and the immutable snapshot every view reads.
//
// Every event a check emits is a condition change: an unhealthy event
// raises (or re-grades) the condition of its (check, entity), a healthy one
// clears it, a check-scoped healthy event clears everything its check said.
// Folding the event stream into the model is what makes the views agree
// with the events by construction: nothing else decides a verdict.
package health
