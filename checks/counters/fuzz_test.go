package counters

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/sysfs"
)

// FuzzParseCounter: whatever a counter file holds, ParseCounter either
// returns the decimal it spells or ErrUnreadable, and never panics; the
// evaluator can then never mistake garbage for 0.
func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "42\n", "18446744073709551615\n", "18446744073709551616\n",
		"N/A (no PMA)\n", "", "-1\n", " 7 \n", "1e3", "0x10"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := sysfs.ParseCounter(b)
		if err != nil {
			if !errors.Is(err, sysfs.ErrUnreadable) {
				t.Fatalf("error %v is not ErrUnreadable", err)
			}
			return
		}
		trimmed := strings.TrimSpace(string(b))
		want, perr := strconv.ParseUint(trimmed, 10, 64)
		if perr != nil || want != v || strings.HasPrefix(trimmed, "+") {
			t.Fatalf("ParseCounter(%q) = %d; strconv says %d, %v", b, v, want, perr)
		}
	})
}
