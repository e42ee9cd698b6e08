// Package sink defines where events go after the outbox has them: the
// contract each destination (journal, JSON lines, platform connector)
// implements, and how a destination says "retry later" versus "never".
package sink
