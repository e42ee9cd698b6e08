package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/fabric/fattree"
	"github.com/nichealth/nichealthd/internal/component"
)

// largeFabric writes the 57 MB ibnetdiscover file: a radix-128
// three-tier fat tree of 43,008 dual-rail hosts (89,408 nodes, 258,048
// links).
func largeFabric(tb testing.TB, dir string) string {
	tb.Helper()
	f, err := fattree.Build(fattree.Spec{Radix: 128, Hosts: 43008, Pods: 21, Rails: 2, HostFormat: "gpu-node-%05d"})
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "large.topo")
	out, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.WriteTopology(out); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// memCgroup is a cgroup v1 memory group limited to limit bytes, removed
// when the test ends. Without root or the memory controller the test
// reports the missing component.
func memCgroup(t *testing.T, limit int64) string {
	t.Helper()
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		component.Missing(t, "no cgroup v1 memory controller at %s: %v", root, err)
	}
	dir := filepath.Join(root, fmt.Sprintf("fabric-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		component.Missing(t, "create a memory cgroup (needs root): %v", err)
	}
	t.Cleanup(func() {
		// The command has exited by now; rmdir fails only while the
		// kernel still uncharges it.
		for i := 0; i < 100 && os.Remove(dir) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil && f == "memory.limit_in_bytes" {
			t.Fatal(err)
		}
	}
	return dir
}

func cgroupValue(t *testing.T, dir, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Issue 32 row 7: a 57 MB ibnetdiscover file took 1.1 GB (19 times its
// size) and made a 206 MB page. The built command, in a memory cgroup of
// three times its input, maps it to a page and to JSON: it parses as the
// file streams in, keeps a compact graph and writes the page from
// tables, so it stays within the limit (the old one was killed by it),
// and the page is smaller than its input.
func TestBounded_7_LargeFabricMapsWithinThreeTimesItsInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and maps a 57 MB fabric")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nichealth-fabric")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	topo := largeFabric(t, dir)
	fi, err := os.Stat(topo)
	if err != nil {
		t.Fatal(err)
	}
	in := fi.Size()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"page", []string{"map", "--ibnetdiscover", topo, "-o", filepath.Join(dir, "fabric.html")}},
		{"json", []string{"map", "--ibnetdiscover", topo, "--json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := memCgroup(t, 3*in)
			// The shell joins the group before it becomes the command, so
			// every byte the command allocates is charged there.
			cmd := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg, bin)
			cmd.Args = append(cmd.Args, tc.args...)
			// The command as an operator runs it: its own soft limit, not
			// the test process's GOMEMLIMIT=off.
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOMEMLIMIT=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Stdout = discard{}
			if err := cmd.Run(); err != nil {
				t.Fatalf("nichealth-fabric %s in %d MB: %v (killed by the limit?)\n%s", tc.name, 3*in>>20, err, stderr.String())
			}
			peak := cgroupValue(t, cg, "memory.max_usage_in_bytes")
			t.Logf("input %d MB, peak %d MB (%.2f times the input), limit %d MB", in>>20, peak>>20, float64(peak)/float64(in), 3*in>>20)
		})
	}
	pg, err := os.Stat(filepath.Join(dir, "fabric.html"))
	if err != nil {
		t.Fatal(err)
	}
	if pg.Size() >= in {
		t.Errorf("page %d MB for a %d MB input", pg.Size()>>20, in>>20)
	}
}

// TestMain keeps the commands run in this process (run) from setting a
// soft memory limit sized for their small inputs on the whole test
// binary.
func TestMain(m *testing.M) {
	os.Setenv("GOMEMLIMIT", "off")
	os.Exit(m.Run())
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The command's cost per input byte on a 7 MB fabric (radix 64, 6,144
// dual-rail hosts): bytes allocated, and the page's size.
func BenchmarkMap_LargeFabric(b *testing.B) {
	dir := b.TempDir()
	f, err := fattree.Build(fattree.Spec{Radix: 64, Hosts: 6144, Rails: 2, Pods: 12})
	if err != nil {
		b.Fatal(err)
	}
	topo := filepath.Join(dir, "f.topo")
	out, err := os.Create(topo)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.WriteTopology(out); err != nil {
		b.Fatal(err)
	}
	out.Close()
	fi, _ := os.Stat(topo)
	page := filepath.Join(dir, "f.html")
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runs := 0
	for b.Loop() {
		runs++
		var errs bytes.Buffer
		if code := run([]string{"map", "--ibnetdiscover", topo, "-o", page}, discard{}, &errs); code != exitOK {
			b.Fatal(errs.String())
		}
	}
	runtime.ReadMemStats(&after)
	pg, _ := os.Stat(page)
	b.ReportMetric(float64(pg.Size())/float64(fi.Size()), "page-B/input-B")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(runs)/float64(fi.Size()), "alloc-B/input-B")
}
