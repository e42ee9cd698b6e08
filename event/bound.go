package event

import (
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Bounds on what one event carries. Every string of an event comes from
// outside the daemon at some remove (a sysfs file, the configuration's
// description, the GPU metadata file), and a record the outbox cannot
// store or a connector cannot receive would hold back every event behind
// it; so New cuts each part to a size that always fits, with a marker
// that says how much was cut. A message escapes to at most six times its
// bytes in JSON ("<" is \u003c), so the largest event encodes well below
// the outbox's 1 MiB record limit and gRPC's 4 MiB message limit.
const (
	MaxMessageBytes  = 4 << 10
	MaxMetadataBytes = 2 << 10 // one value
	MaxMetadataKeys  = 32
	MaxMetaKeyBytes  = 64
	MaxErrorCodes    = 16
	MaxErrorBytes    = 256 // one code
	MaxEntities      = 1024
	MaxNameBytes     = 256 // check name, node name, an entity value
)

// truncatedMark is what a cut string ends with.
const truncatedMark = "… [truncated %d bytes]"

// Truncate returns s cut to at most n bytes, on a UTF-8 boundary, ending
// in a marker that says how many bytes were cut. s is returned unchanged
// when it fits.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// The mark with len(s) is at least as long as the final one.
	keep := max(n-len(fmt.Sprintf(truncatedMark, len(s))), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf(truncatedMark, len(s)-keep)
}

// boundStrings truncates each element of ss in place and keeps at most
// max of them, the last one saying how many more there were.
func boundStrings(ss []string, maxN, each int) []string {
	for i := range ss {
		ss[i] = Truncate(ss[i], each)
	}
	if len(ss) > maxN {
		more := len(ss) - (maxN - 1)
		ss = append(ss[:maxN-1], "… "+strconv.Itoa(more)+" more")
	}
	return ss
}

// boundMetadata returns m with at most MaxMetadataKeys keys (in key
// order; metadata "truncated" names how many were left out) and every key
// and value within its bound. m itself is never modified: checks share
// their metadata maps.
func boundMetadata(m map[string]string) map[string]string {
	fits := len(m) <= MaxMetadataKeys
	for k, v := range m {
		if len(k) > MaxMetaKeyBytes || len(v) > MaxMetadataBytes {
			fits = false
			break
		}
	}
	if fits {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]string, min(len(m), MaxMetadataKeys))
	for i, k := range keys {
		if i == MaxMetadataKeys-1 && len(keys) > MaxMetadataKeys {
			out["truncated"] = fmt.Sprintf("%d metadata keys left out", len(keys)-i)
			break
		}
		out[Truncate(k, MaxMetaKeyBytes)] = Truncate(m[k], MaxMetadataBytes)
	}
	return out
}
