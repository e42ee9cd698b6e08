package kernellog

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"

	"github.com/nichealth/nichealthd/topology/kmsg"
)

// BenchmarkJudge_Batch judges one poll's worth of records (the daemon's
// batch, 1024): the worst case, a storm of the last pattern in the table
// (every record tries all the others first), and a mix of lines that
// match nothing, as a busy host's log mostly is.
func BenchmarkJudge_Batch(b *testing.B) {
	for _, bc := range []struct {
		name string
		line string
		dict bool
	}{
		{"storm_last_pattern", "mlx5_core 0000:3b:00.0: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)", true},
		{"other_drivers", "nvme nvme3: I/O 1023 QID 12 timeout, aborting", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ps, _ := patterntable.Merge(patterntable.Defaults(), nil)
			tb, _ := Compile(ps)
			c, mem := New(tb, Options{}), NewMemory()
			recs := make([]kmsg.Record, 1024)
			for i := range recs {
				recs[i] = kmsg.Record{Seq: uint64(i + 1), Level: 3, Message: bc.line, Time: t0}
				if bc.dict {
					recs[i].Subsystem, recs[i].Device = "pci", "+pci:0000:3b:00.0"
				}
			}
			devs := devices()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Judge(mem, recs, devs, t0.Add(time.Second))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/record")
		})
	}
}
