package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/topology/sim"
)

// The simulated node's cable into the lab's fabric: mlx5_0 port 1 takes
// the GUIDs of the lab's gpu-a017, cabled to ibsw-leaf1 port 17. One HCA
// only: umad2sim makes a program speak as one node of the fabric, and
// nichealth-mad is one program; the node's other ports find no peer and
// the daemon says so once.
const (
	fabricDevice   = "mlx5_0"
	fabricNodeGUID = 0xa088c20300ab0000
	fabricPortGUID = 0xa088c20300ab0001
)

// startFabric starts the fabric lab when its programs and nichealth-mad
// are there (kept in keep when that is set: make try's), cables h's
// mlx5_0 into it with a clean switch port, and returns the [farEnd] table
// (head, plus the node-name map) and the [mad] table (the helper) that
// read it; otherwise
// why not, in a sentence that says what to install.
func startFabric(h *sim.Host, bin, dir, keep, head string) (*iblab.Lab, string, string) {
	helper, err := filepath.Abs(filepath.Join(bin, "nichealth-mad"))
	if err != nil {
		return nil, "", err.Error()
	}
	if _, err := os.Stat(helper); err != nil {
		return nil, "", "no nichealth-mad in " + bin + " (make build builds it with libibumad-dev and libibmad-dev)"
	}
	if err := iblab.Tools(); err != nil {
		return nil, "", err.Error() + " (the fabric lab needs all three: apt-get install ibsim-utils opensm infiniband-diags)"
	}
	lab, err := iblab.Start(iblab.Options{Fabric: iblab.TwoLeaves, SM: iblab.SMHost, Active: []string{iblab.GPUA017}, Keep: keep})
	if err != nil {
		return nil, "", "the fabric lab did not start: " + err.Error()
	}
	mapf, err := iblab.FabricFile(dir, iblab.NodeNameMap)
	if err == nil {
		err = h.SetGUID(fabricDevice, 0, fabricNodeGUID)
	}
	if err == nil {
		err = h.SetGUID(fabricDevice, 1, fabricPortGUID)
	}
	if err == nil {
		err = lab.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 0)
	}
	if err != nil {
		lab.Close()
		return nil, "", err.Error()
	}
	return lab, head + fmt.Sprintf("nodeNameMap = %q\n[mad]\nhelper = %q\n", mapf, helper), ""
}
