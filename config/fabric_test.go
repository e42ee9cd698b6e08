package config

import (
	"strings"
	"testing"
	"time"
)

func TestConfig_FabricDefaults(t *testing.T) {
	c, err := Parse("c.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := FabricConfig{Assignment: "/etc/nichealthd/fabric-assignment.json", AssignmentOptional: true, Interval: 60 * time.Second, Timeout: 2 * time.Second}
	if c.Fabric != want {
		t.Fatalf("defaults %+v, want %+v", c.Fabric, want)
	}
	c, err = Parse("c.toml", []byte("[fabric]\nassignment = \"/run/job/share.json\"\nhost = \"gpu-a017\"\ninterval = \"10s\"\ntimeout = \"500ms\"\n"))
	want = FabricConfig{Assignment: "/run/job/share.json", Host: "gpu-a017", Interval: 10 * time.Second, Timeout: 500 * time.Millisecond}
	if err != nil || c.Fabric != want {
		t.Fatalf("%+v %v, want %+v", c.Fabric, err, want)
	}
	c, err = Parse("c.toml", []byte("[fabric]\nassignment = \"\"\n"))
	if err != nil || c.Fabric.Assignment != "" {
		t.Fatalf("off: %+v %v", c.Fabric, err)
	}
	c, err = Parse("c.toml", []byte("[fabric]\nassignment = \"/etc/nichealthd/fabric-assignment.json\"\n"))
	if err != nil || !c.Fabric.AssignmentOptional {
		t.Fatalf("the default spelled out: %+v %v", c.Fabric, err)
	}
}

func TestConfig_FabricRefusals(t *testing.T) {
	for _, tc := range []struct{ body, key, want string }{
		{"[fabric]\ninterval = \"9s\"\n", "fabric.interval", "10s..1h"},
		{"[fabric]\ninterval = \"2h\"\n", "fabric.interval", "10s..1h"},
		{"[fabric]\ninterval = 60\n", "fabric.interval", "duration"},
		{"[fabric]\ntimeout = \"5ms\"\n", "fabric.timeout", "10ms..1m"},
		{"[fabric]\nassignment = \"share.json\"\n", "fabric.assignment", "absolute"},
		{"[fabric]\nassignment = \"/etc/nichealthd/\"\n", "fabric.assignment", "absolute file path"},
		{"[fabric]\nhost = \"gpu a017\"\n", "fabric.host", "not a host name"},
		{"[fabric]\nhosts = \"x\"\n", "fabric.hosts", "unknown key"},
	} {
		_, err := Parse("c.toml", []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s and %q", tc.body, err, tc.key, tc.want)
		}
	}
}
