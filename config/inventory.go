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
	// LostFunctionHold is a pointer: "0s" (the enumerations alone) is a
	// setting, not the default.
	LostFunctionHold *Duration `toml:"lostFunctionHold"`
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
	// LostHold is how long a NIC function monitored this boot must stay
	// without its driver or RDMA device, beyond its 3 complete
	// enumerations, before its loss is a condition (DESIGN.md difference
	// 18).
	LostHold time.Duration
}

// ModelDefault marks an expectation left to the GPU model's default.
const ModelDefault = -1

// DefaultExpectedPortsHold is the shortfall's hold: as long as the card
// homogeneity hold may be (DESIGN.md difference 4, at most 60 s), for the
// same reason: every port passes INIT while the subnet manager sweeps.
const DefaultExpectedPortsHold = time.Minute

// DefaultLostFunctionHold is how long a function that lost its driver or
// RDMA device at run time waits before its loss is fatal (DESIGN.md
// difference 18). A measured mlx5_ib reload takes its RDMA devices away
// for about 1.5 s; a full mlx5_core reload (modprobe -r mlx5_ib mlx5_core,
// a devlink reload, an openibd restart) re-initialises every function's
// firmware one after the other, several seconds each on a ConnectX-7, so
// an 8-to-12-function node is without some of its devices for 10-20 s.
// 30 s covers that with margin at any poll interval, because the hold is
// time, not polls (at a 250 ms poll, 3 enumerations are 0.75 s); a
// function really lost is still reported within half a minute, long
// before anyone could have replaced it.
const DefaultLostFunctionHold = 30 * time.Second

// MaxLostFunctionHold bounds the hold: a longer one would leave a node
// that lost a NIC looking healthy for longer than a scheduler tolerates.
const MaxLostFunctionHold = 10 * time.Minute

// inventoryFrom reads [inventory].
func inventoryFrom(c *Config, f *File, bad badFunc) error {
	v := f.Inventory
	c.Inventory = InventoryConfig{Enabled: boolOr(v.Enabled, true), FirmwareDrift: boolOr(v.FirmwareDrift, true),
		ExpectedPorts: ModelDefault, ExpectedRateGbps: ModelDefault, Hold: DefaultExpectedPortsHold, LostHold: DefaultLostFunctionHold}
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
	if v.LostFunctionHold != nil {
		c.Inventory.LostHold = v.LostFunctionHold.Duration
	}
	if h := c.Inventory.LostHold; h < 0 || h > MaxLostFunctionHold {
		return bad("inventory.lostFunctionHold", "%v must be 0..%v: how long a NIC function must stay without its driver or RDMA device "+
			"(after 3 complete enumerations) before its loss is fatal; a mlx5_ib reload takes a few seconds, a mlx5_core reload up to about 20 s", h, MaxLostFunctionHold)
	}
	return nil
}
