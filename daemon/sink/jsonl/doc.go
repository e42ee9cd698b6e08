// Package jsonl is the JSON-lines sink: one event per line, appended to a
// file or written to stdout, in the protojson field names of DESIGN.md
// section 3. Like rsyslog's file output it follows its path, not its open
// file: when logrotate moves or deletes the file, the next batch goes to a
// new file at the path.
package jsonl
