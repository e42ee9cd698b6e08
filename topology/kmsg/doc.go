// Package kmsg reads the kernel's log as /dev/kmsg hands it out
// (Documentation/ABI/testing/dev-kmsg): one record per read,
// "prio,seq,ts,flags[,...];message\n", then the record's dictionary as
// continuation lines " KEY=value\n" (SUBSYSTEM=pci, DEVICE=+pci:0000:3b:00.0,
// which name the device better than any text does). Bytes the kernel does
// not print are escaped as \xNN.
//
// Parse and Split are pure functions over bytes, fuzzed. Source reads
// <devRoot>/kmsg on a goroutine of its own, bounds every record (a longer
// one is dropped with a count) and the queue it fills: a full queue holds
// the reader back, never the caller, and the kernel's ring keeps the
// records meanwhile. It reports ring-buffer overruns (EPIPE, or a gap in
// the sequence numbers) once each with how many records were lost, and
// resumes after a sequence number so a restart neither repeats nor skips
// a record. The poll loop only drains what is queued.
package kmsg
