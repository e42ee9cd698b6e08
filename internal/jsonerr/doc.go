// Package jsonerr says why encoding/json refused a file in the file's own
// terms: the line, the key path, the kind of value found and the kind
// wanted. Operators edit and generate JSON, not our Go types, so a
// refusal never quotes a decoder's type names. Every JSON file an
// operator or another tool hands the daemon (gpu_metadata.json, a fabric
// assignment, a status dump) is refused through it.
package jsonerr
