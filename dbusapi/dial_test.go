package dbusapi

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The unreachable-bus message names the address that was really tried:
// the variable's value when it is set, the standard socket otherwise.
func TestDial_UnreachableNamesTheAddressTried(t *testing.T) {
	addr := "unix:path=" + filepath.Join(t.TempDir(), "no-bus")
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	_, err := Dial("")
	if !errors.Is(err, ErrBusUnreachable) {
		t.Fatalf("Dial: %v, want ErrBusUnreachable", err)
	}
	if msg := err.Error(); !strings.Contains(msg, addr+" (from DBUS_SYSTEM_BUS_ADDRESS)") || strings.Contains(msg, "default") {
		t.Fatalf("message %q should name %s as the variable's value, not the default", msg, addr)
	}
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "")
	_, err = Dial("unix:path=" + filepath.Join(t.TempDir(), "other"))
	if err == nil || strings.Contains(err.Error(), "DBUS_SYSTEM_BUS_ADDRESS") {
		t.Fatalf("an explicit address: %v", err)
	}
}
