// Package outbox is the durable queue between detection and delivery: every
// event is appended and fsynced here before the state that produced it is
// saved, and each sink drains it in order with its own cursor, so a crash
// or an unreachable destination delays events but never loses them
// (at-least-once; the event ID is stable so a receiver can drop repeats).
//
// On disk, under one directory:
//
//	<seq20>.log    append-only segments named after the first sequence
//	               number they may hold; records of
//	               magic[4] len u32 crc u32 seq u64 flags u8 pad[3] | JSON
//	               (little endian; CRC-32C over len, seq, flags and the
//	               JSON {"seq":N,"event":{...}})
//	cursor.<sink>  the last sequence number the sink acknowledged
//	lock           flock'ed while a process has the outbox open
//
// The magic bytes 0xFF and 0xFE never occur in JSON text (which is UTF-8),
// so after a damaged region the reader finds the next record by scanning
// for them, and one bad record costs only itself.
package outbox
