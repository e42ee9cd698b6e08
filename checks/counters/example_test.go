package counters_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Example shows the daemon's side of the contract: merge the table once,
// reconcile the loaded state, then per poll read each planned file once and
// hand the value to every definition that reads it.
func Example() {
	dir, _ := os.MkdirTemp("", "port")
	defer os.RemoveAll(dir)
	portDir := filepath.Join(dir, "ports", "1")
	_ = os.MkdirAll(filepath.Join(portDir, "counters"), 0o755)
	write := func(v string) { _ = os.WriteFile(filepath.Join(portDir, "counters", "link_downed"), []byte(v), 0o644) }

	defs, err := countertable.Merge(countertable.Defaults(), nil) // overrides from [[counterDetection.counters]]
	if err != nil {
		fmt.Println(err)
		return
	}
	st := counters.NewMemory()
	ev := counters.NewEvaluator(counters.Options{})
	ev.Reconcile(st, defs)

	var plan []countertable.Definition
	for _, d := range counters.PlanFor(defs) {
		if d.AppliesTo(topology.LinkLayerInfiniBand) {
			plan = append(plan, d)
		}
	}
	groups := counters.Files(plan)
	poll := func(now time.Time) {
		for _, g := range groups {
			file := plan[g.Defs[0]].File(portDir, filepath.Join(dir, "net"), "ib0")
			b, err := os.ReadFile(file) // the daemon reads with a deadline
			var v uint64
			if err == nil {
				v, err = sysfs.ParseCounter(b)
			}
			for _, i := range g.Defs {
				specs, _ := ev.Evaluate(st, counters.Sample{Device: "mlx5_0", Port: 1,
					LinkLayer: topology.LinkLayerInfiniBand, Def: &plan[i], Value: v, Err: err, File: file, Now: now}, false)
				for _, s := range specs {
					fmt.Println(s.CheckName, s.IsFatal, s.Message)
				}
			}
		}
	}
	t0 := time.Date(2025, 6, 15, 10, 0, 0, 0, time.UTC)
	write("0\n")
	poll(t0)
	write("1\n")
	poll(t0.Add(5 * time.Second))
	write("0\n") // perfquery -x
	poll(t0.Add(10 * time.Second))
	// Output:
	// InfiniBandStateCheck true Port mlx5_0 port 1: link_downed - Port Training State Machine failed - QP disconnect (value=1, delta=1, rate=0.20/sec)
	// InfiniBandStateCheck false Counter link_downed recovered on port mlx5_0 port 1 (counter reset from 1 to 0)
}
