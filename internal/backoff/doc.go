// Package backoff paces the retries of one kind of failure: an episode
// backs off exponentially (capped and jittered, so a fleet does not retry
// in lockstep) and says when it starts and ends, so an outage of any length
// costs two log lines.
package backoff
