package metrics

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"syscall"
	"time"
)

// The go_* and process_* families are the ones every Go exporter serves
// (prometheus/client_golang's Go and process collectors, same names, types
// and meanings), so fleet dashboards and the stock "exporter is leaking"
// alerts work on nichealthd unchanged. They are written here rather than by
// pulling in client_golang: the rest of the page is hand-written for a
// scrape that allocates almost nothing, and the library would add five
// modules to a daemon that runs on every node for a dozen numbers.

// userHZ is the unit of the CPU times in /proc/<pid>/stat. The kernel
// exports USER_HZ = 100 to user space on every architecture Linux runs
// mlx5 on, whatever its internal HZ.
const userHZ = 100

// Indexes into runtimeDescs.
const (
	rGCDuration = iota
	rGoroutines
	rInfo
	rAllocBytes
	rAllocBytesTotal
	rFreesTotal
	rHeapAllocBytes
	rHeapInuseBytes
	rHeapObjects
	rMallocsTotal
	rNextGCBytes
	rSysBytes
	rThreads
	numGoFamilies
)

// Process families follow the go_ ones in runtimeDescs.
const (
	rCPUSeconds = numGoFamilies + iota
	rMaxFDs
	rOpenFDs
	rResidentBytes
	rStartTime
	rVirtualBytes
	numRuntimeFamilies
)

// runtimeDescs is the table of runtime families, each part in name order
// (go_* sorts before nichealth_*, process_* after, and the page keeps all
// families sorted).
func runtimeDescs() [numRuntimeFamilies]desc {
	return [numRuntimeFamilies]desc{
		rGCDuration:      {"go_gc_duration_seconds", "A summary of the pause duration of garbage collection cycles.", summary},
		rGoroutines:      {"go_goroutines", "Number of goroutines that currently exist.", gauge},
		rInfo:            {"go_info", "Information about the Go environment.", gauge},
		rAllocBytes:      {"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", gauge},
		rAllocBytesTotal: {"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", counter},
		rFreesTotal:      {"go_memstats_frees_total", "Total number of heap objects frees.", counter},
		rHeapAllocBytes:  {"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", gauge},
		rHeapInuseBytes:  {"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", gauge},
		rHeapObjects:     {"go_memstats_heap_objects", "Number of currently allocated objects.", gauge},
		rMallocsTotal:    {"go_memstats_mallocs_total", "Total number of heap objects allocated.", counter},
		rNextGCBytes:     {"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", gauge},
		rSysBytes:        {"go_memstats_sys_bytes", "Number of bytes obtained from system.", gauge},
		rThreads:         {"go_threads", "Number of OS threads created.", gauge},
		rCPUSeconds:      {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counter},
		rMaxFDs:          {"process_max_fds", "Maximum number of open file descriptors.", gauge},
		rOpenFDs:         {"process_open_fds", "Number of open file descriptors.", gauge},
		rResidentBytes:   {"process_resident_memory_bytes", "Resident memory size in bytes.", gauge},
		rStartTime:       {"process_start_time_seconds", "Start time of the process since unix epoch in seconds.", gauge},
		rVirtualBytes:    {"process_virtual_memory_bytes", "Virtual memory size in bytes.", gauge},
	}
}

// runtimeMetricNames are the runtime/metrics samples read per scrape. They
// are read without stopping the world, unlike runtime.ReadMemStats.
var runtimeMetricNames = [...]string{
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
	"/gc/heap/frees:objects",
	"/gc/heap/goal:bytes",
	"/gc/heap/objects:objects",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/total:bytes",
	"/sched/goroutines:goroutines",
}

// writeGo writes the go_* families.
func (e *encoder) writeGo() {
	ds := runtimeDescs()
	var samples [len(runtimeMetricNames)]rtmetrics.Sample
	for i, n := range runtimeMetricNames {
		samples[i].Name = n
	}
	rtmetrics.Read(samples[:])
	rv := func(name string) uint64 {
		for i := range samples {
			if samples[i].Name == name && samples[i].Value.Kind() == rtmetrics.KindUint64 {
				return samples[i].Value.Uint64()
			}
		}
		return 0 // a metric this Go release dropped
	}
	heapObjBytes := rv("/memory/classes/heap/objects:bytes")

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	e.writeHeader(ds[rGCDuration])
	for i, q := range [...]string{"0", "0.25", "0.5", "0.75", "1"} {
		var d time.Duration
		if gc.NumGC > 0 {
			d = gc.PauseQuantiles[i]
		}
		e.out = append(e.out, ds[rGCDuration].name...)
		e.out = append(e.out, `{quantile="`...)
		e.out = append(e.out, q...)
		e.out = append(e.out, `"} `...)
		e.out = appendFloat(e.out, d.Seconds())
		e.out = append(e.out, '\n')
	}
	e.writeLine(ds[rGCDuration].name, "_sum", "", fval(gc.PauseTotal.Seconds()))
	e.writeLine(ds[rGCDuration].name, "_count", "", uval(uint64(gc.NumGC)))

	threads, _ := runtime.ThreadCreateProfile(nil)
	e.writeOne(ds[rGoroutines], "", uval(rv("/sched/goroutines:goroutines")))
	e.writeOne(ds[rInfo], `{version="`+runtime.Version()+`"}`, uval(1))
	e.writeOne(ds[rAllocBytes], "", uval(heapObjBytes))
	e.writeOne(ds[rAllocBytesTotal], "", uval(rv("/gc/heap/allocs:bytes")))
	e.writeOne(ds[rFreesTotal], "", uval(rv("/gc/heap/frees:objects")))
	e.writeOne(ds[rHeapAllocBytes], "", uval(heapObjBytes))
	e.writeOne(ds[rHeapInuseBytes], "", uval(heapObjBytes+rv("/memory/classes/heap/unused:bytes")))
	e.writeOne(ds[rHeapObjects], "", uval(rv("/gc/heap/objects:objects")))
	e.writeOne(ds[rMallocsTotal], "", uval(rv("/gc/heap/allocs:objects")))
	e.writeOne(ds[rNextGCBytes], "", uval(rv("/gc/heap/goal:bytes")))
	e.writeOne(ds[rSysBytes], "", uval(rv("/memory/classes/total:bytes")))
	e.writeOne(ds[rThreads], "", uval(uint64(max(threads, 0))))
}

// writeProcess writes the process_* families from /proc/self (the
// daemon's own process, never the simulated procfsRoot). When /proc is
// unreadable they are left out: a page without them is better than a
// failed scrape, and process_start_time_seconds missing says why to
// whoever looks.
func (e *encoder) writeProcess() {
	ps, err := readProcSelf()
	if err != nil {
		return
	}
	ds := runtimeDescs()
	e.writeOne(ds[rCPUSeconds], "", fval(float64(ps.cpuTicks)/userHZ))
	if ps.maxFDs > 0 {
		e.writeOne(ds[rMaxFDs], "", uval(ps.maxFDs))
	}
	if ps.openFDs >= 0 {
		e.writeOne(ds[rOpenFDs], "", uval(uint64(ps.openFDs)))
	}
	e.writeOne(ds[rResidentBytes], "", uval(ps.rssBytes))
	if ps.startTime > 0 {
		e.writeOne(ds[rStartTime], "", fval(ps.startTime))
	}
	e.writeOne(ds[rVirtualBytes], "", uval(ps.vsizeBytes))
}

// writeOne writes a family with one sample; labels is rendered, e.g.
// {version="go1.26"}.
func (e *encoder) writeOne(d desc, labels string, v value) {
	e.writeHeader(d)
	e.writeLine(d.name, "", labels, v)
}

func (e *encoder) writeLine(name, suffix, labels string, v value) {
	e.out = append(e.out, name...)
	e.out = append(e.out, suffix...)
	e.out = append(e.out, labels...)
	e.out = append(e.out, ' ')
	e.out = appendValue(e.out, v)
	e.out = append(e.out, '\n')
}

type procSelf struct {
	cpuTicks   uint64
	rssBytes   uint64
	vsizeBytes uint64
	startTime  float64 // unix seconds; 0 when /proc/stat has no btime
	openFDs    int     // -1 when /proc/self/fd is unreadable
	maxFDs     uint64
}

// readProcSelf reads what the process_* families need from /proc/self.
func readProcSelf() (procSelf, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procSelf{}, fmt.Errorf("read /proc/self/stat: %w", err)
	}
	ps, starttime, err := parseProcStat(b)
	if err != nil {
		return ps, err
	}
	if bt, err := bootTime(); err == nil {
		ps.startTime = float64(bt) + float64(starttime)/userHZ
	}
	ps.openFDs = -1
	if d, err := os.Open("/proc/self/fd"); err == nil {
		names, err := d.Readdirnames(-1)
		d.Close()
		if err == nil {
			ps.openFDs = len(names) - 1 // the descriptor that listed them
		}
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		ps.maxFDs = rl.Cur
	}
	return ps, nil
}

// parseProcStat reads the fields of a /proc/<pid>/stat line that the
// process_* families need (proc(5): utime 14, stime 15, starttime 22,
// vsize 23, rss 24, counted from 1 with the command name as field 2).
// starttime is in USER_HZ ticks since boot.
func parseProcStat(b []byte) (ps procSelf, starttime uint64, err error) {
	// The command name may contain spaces and parentheses; it ends at the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ps, 0, fmt.Errorf("parse /proc/self/stat: no ')' in %q", b)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 22 {
		return ps, 0, fmt.Errorf("parse /proc/self/stat: %d fields after the command name, want at least 22", len(f))
	}
	num := func(field int) uint64 {
		v, _ := strconv.ParseUint(string(f[field-3]), 10, 64)
		return v
	}
	ps.cpuTicks = num(14) + num(15)
	ps.vsizeBytes = num(23)
	ps.rssBytes = num(24) * uint64(os.Getpagesize())
	return ps, num(22), nil
}

// bootTime is the btime line of /proc/stat: the boot time in unix seconds,
// which /proc/self/stat's starttime counts from.
func bootTime() (uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse /proc/stat btime %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("parse /proc/stat: no btime line")
}
