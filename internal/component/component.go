package component

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// CIEnv is the environment variable that marks a CI run.
const CIEnv = "CI"

// UnderCI reports whether CI is set to a true value ("true", "1", ...).
func UnderCI() bool {
	v, err := strconv.ParseBool(os.Getenv(CIEnv))
	return err == nil && v
}

// Missing ends the test because a real component it needs is unavailable:
// a skip on a developer machine, a failure under CI. The message says what
// is missing and how to provide it.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if UnderCI() {
		tb.Fatalf("%s=true and a real component is missing: %s", CIEnv, msg)
		return
	}
	tb.Skip(msg)
}
