// Package wire is the protocol between nichealthd and nichealth-mad, the
// helper that speaks MADs through rdma-core's libibumad and libibmad: one
// JSON object per line each way, a request on the helper's stdin and its
// answer on its stdout, strictly one at a time.
//
// A request names its operation, carries an id (the answer repeats it) and
// a timeout in milliseconds (the helper's budget for every MAD the
// operation sends; the daemon kills a helper that overruns it). Lines are
// at most MaxLine bytes. Decode functions are pure, bounded and fuzzed:
// they accept only what the helper can say (a closed set of operations,
// GUIDs as 0x and 16 hex digits, LIDs and port numbers in range, texts
// bounded and valid UTF-8), so a confused or hostile helper cannot hand the
// daemon anything it would not have read from the fabric. The operations
// only read: no operation maps to a MAD Set.
package wire
