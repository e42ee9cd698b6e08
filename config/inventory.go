package config

import (
	"math"
	"time"
)

// InventoryFile is the [inventory] table: the PCI inventory of NIC
// functions (present without an RDMA device, missing since the last
// boot), firmware and model drift, and the node's expected compute ports.
type InventoryFile struct {
	Enabled                 *bool    `toml:"enabled"`
	FirmwareDrift           *bool    `toml:"firmwareDrift"`
	ExpectedComputePorts    *int     `toml:"expectedComputePorts"`
	ExpectedComputeRateGbps *float64 `toml:"expectedComputeRateGbps"`
	ExpectedPortsHold       Duration `toml:"expectedPortsHold"`
}

// InventoryConfig is [inventory] with defaults applied.
type InventoryConfig struct {
	Enabled       bool
	FirmwareDrift bool
	// ExpectedPorts is how many active compute ports the node needs:
	// ModelDefault for the GPU model's documented complement, 0 for no
	// expectation.
	ExpectedPorts int
	// ExpectedRateGbps is the least rate a port counts at; ModelDefault
	// with ExpectedPorts ModelDefault takes the model's, otherwise 0.
	ExpectedRateGbps float64
	// Hold is how long the shortfall must last before it is reported.
	Hold time.Duration
}

// ModelDefault marks an expectation left to the GPU model's default.
const ModelDefault = -1

// DefaultExpectedPortsHold is the shortfall's hold: as long as the card
// homogeneity hold may be (DESIGN.md difference 4, at most 60 s), for the
// same reason: every port passes INIT while the subnet manager sweeps.
const DefaultExpectedPortsHold = time.Minute

// inventoryFrom reads [inventory].
func inventoryFrom(c *Config, f *File, bad badFunc) error {
	v := f.Inventory
	c.Inventory = InventoryConfig{Enabled: boolOr(v.Enabled, true), FirmwareDrift: boolOr(v.FirmwareDrift, true),
		ExpectedPorts: ModelDefault, ExpectedRateGbps: ModelDefault, Hold: DefaultExpectedPortsHold}
	if v.ExpectedComputePorts != nil {
		c.Inventory.ExpectedPorts = *v.ExpectedComputePorts
		if n := *v.ExpectedComputePorts; n < 0 || n > 4096 {
			return bad("inventory.expectedComputePorts", "%d must be 0..4096 (0: no expectation; leave it out for the GPU model's default)", n)
		}
		c.Inventory.ExpectedRateGbps = 0
	}
	if r := v.ExpectedComputeRateGbps; r != nil {
		if math.IsNaN(*r) || *r < 0 || *r > 100000 {
			return bad("inventory.expectedComputeRateGbps", "%v must be 0..100000 Gb/s", *r)
		}
		c.Inventory.ExpectedRateGbps = *r
	}
	setDur(&c.Inventory.Hold, v.ExpectedPortsHold)
	if h := c.Inventory.Hold; h < 0 || h > time.Hour {
		return bad("inventory.expectedPortsHold", "%v must be 0..1h", h)
	}
	return nil
}
