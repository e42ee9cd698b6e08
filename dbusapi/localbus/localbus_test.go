package localbus

import (
	"os/exec"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/internal/component"
)

func TestStartAndConnect(t *testing.T) {
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		component.Missing(t, "dbus-daemon not installed (apt-get install dbus)")
	}
	b, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c, err := dbus.Connect(b.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if reply, err := c.RequestName("org.nichealth.Test", 0); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own a name: %v %v", reply, err)
	}
}
