// Package syncbuf is a byte buffer safe for one writer goroutine and a
// concurrent reader: a child process's output copied by exec, a logger
// written by a goroutine under test, read by the test while they run.
package syncbuf
