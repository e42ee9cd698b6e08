package config

import (
	"strings"
	"testing"
	"time"
)

// [inventory]'s defaults, pinned: on, drift on, the GPU model's expected
// ports, a 60 s hold (the card homogeneity hold's bound, DESIGN.md
// difference 4); and what is refused.
func TestConfig_InventoryDefaultsAndLimits(t *testing.T) {
	c, err := Parse("c.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Inventory; !got.Enabled || !got.FirmwareDrift || got.ExpectedPorts != -1 || got.ExpectedRateGbps != -1 || got.Hold != 60*time.Second {
		t.Fatalf("defaults %+v", got)
	}
	c, err = Parse("c.toml", []byte("[inventory]\nexpectedComputePorts = 4\n"))
	if err != nil || c.Inventory.ExpectedPorts != 4 || c.Inventory.ExpectedRateGbps != 0 {
		t.Fatalf("ports alone: %+v %v", c.Inventory, err)
	}
	c, err = Parse("c.toml", []byte("[inventory]\nexpectedComputeRateGbps = 200.0\nexpectedPortsHold = \"5s\"\n"))
	if err != nil || c.Inventory.ExpectedPorts != -1 || c.Inventory.ExpectedRateGbps != 200 || c.Inventory.Hold != 5*time.Second {
		t.Fatalf("rate alone: %+v %v", c.Inventory, err)
	}
	for _, bad := range []string{"expectedComputePorts = -2", "expectedComputePorts = 5000", "expectedComputeRateGbps = -1.0",
		"expectedPortsHold = \"2h\"", "expectedPortsHold = 5"} {
		if _, err := Parse("c.toml", []byte("[inventory]\n"+bad+"\n")); err == nil || !strings.Contains(err.Error(), "inventory.") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// DESIGN.md difference 18: the hold of a run-time loss of a NIC function
// defaults to 30 s (long enough for a mlx5_core reload of every function
// at any poll interval), is set as a duration, and a hold out of 0..10m or
// not a duration is refused naming the key and what it is for.
func TestConfig_Design18_LostFunctionHold(t *testing.T) {
	c, err := Parse("c.toml", nil)
	if err != nil || c.Inventory.LostHold != 30*time.Second {
		t.Fatalf("default %v %v", c.Inventory.LostHold, err)
	}
	c, err = Parse("c.toml", []byte("[inventory]\nlostFunctionHold = \"5s\"\n"))
	if err != nil || c.Inventory.LostHold != 5*time.Second {
		t.Fatalf("5s: %v %v", c.Inventory.LostHold, err)
	}
	c, err = Parse("c.toml", []byte("[inventory]\nlostFunctionHold = \"0s\"\n"))
	if err != nil || c.Inventory.LostHold != 0 {
		t.Fatalf("0s: %v %v", c.Inventory.LostHold, err)
	}
	for _, bad := range []string{"lostFunctionHold = \"-1s\"", "lostFunctionHold = \"11m\"", "lostFunctionHold = 30"} {
		_, err := Parse("c.toml", []byte("[inventory]\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "inventory.lostFunctionHold") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	_, err = Parse("c.toml", []byte("[inventory]\nlostFunctionHold = \"11m\"\n"))
	if err == nil || !strings.Contains(err.Error(), "must be 0..10m0s") || !strings.Contains(err.Error(), "mlx5_ib reload") {
		t.Errorf("the refusal does not say the range and why: %v", err)
	}
}
