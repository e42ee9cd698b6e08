package metrics

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The conventional exporter families are on the page with their usual
// names, types and plausible values for this very process.
func TestRuntime_7_GoAndProcessFamilies(t *testing.T) {
	runtime.GC() // so the pause summary has at least one observation
	_, page, _ := scrape(t, New().Handler(unhealthySource()))
	fams, order, err := parseExposition(page)
	if err != nil {
		t.Fatalf("invalid exposition: %v", err)
	}
	for _, d := range runtimeDescs() {
		f := fams[d.name]
		if f == nil {
			t.Errorf("%s missing", d.name)
			continue
		}
		if f.typ != d.kind.String() {
			t.Errorf("%s is a %s, want %s", d.name, f.typ, d.kind)
		}
	}
	if !slices.IsSorted(order) || order[0] != "go_gc_duration_seconds" || order[len(order)-1] != "process_virtual_memory_bytes" {
		t.Errorf("family order %v", order)
	}
	one := func(name string) float64 { return fams[name].samples[0].value }
	if v := one("go_goroutines"); v < 1 {
		t.Errorf("go_goroutines %v", v)
	}
	if v := fams["go_info"].samples[0].labels["version"]; v != runtime.Version() {
		t.Errorf("go_info version %q, want %q", v, runtime.Version())
	}
	gc := fams["go_gc_duration_seconds"]
	if n := len(gc.samples); n != 7 { // five quantiles, _sum, _count
		t.Errorf("go_gc_duration_seconds has %d samples, want 7", n)
	}
	for _, s := range gc.samples {
		if s.name == "go_gc_duration_seconds_count" && s.value < 1 {
			t.Errorf("GC count %v after runtime.GC()", s.value)
		}
	}
	if one("go_memstats_heap_inuse_bytes") < one("go_memstats_heap_alloc_bytes") || one("go_memstats_alloc_bytes") == 0 {
		t.Errorf("heap figures inconsistent: inuse %v alloc %v", one("go_memstats_heap_inuse_bytes"), one("go_memstats_heap_alloc_bytes"))
	}
	if one("go_memstats_mallocs_total") < one("go_memstats_frees_total") {
		t.Errorf("more frees than mallocs")
	}
	if one("process_resident_memory_bytes") == 0 || one("process_virtual_memory_bytes") < one("process_resident_memory_bytes") {
		t.Errorf("rss %v vsize %v", one("process_resident_memory_bytes"), one("process_virtual_memory_bytes"))
	}
	if one("process_open_fds") < 3 || one("process_max_fds") < one("process_open_fds") {
		t.Errorf("fds %v of %v", one("process_open_fds"), one("process_max_fds"))
	}
	// This test process started before the scrape and after the machine booted.
	st := time.Unix(int64(one("process_start_time_seconds")), 0)
	if st.After(time.Now()) || st.Before(time.Now().Add(-24*time.Hour)) {
		t.Errorf("process_start_time_seconds %v", st)
	}
}

func TestRuntime_7_ProcStatCommandNameWithSpacesAndParens(t *testing.T) {
	// Fields are counted from the last ')', so a command name with spaces
	// and parentheses does not shift them.
	line := "4242 (nic (health) d) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 130 0 0 20 0 9 0 123456 1905438720 4253 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	ps, start, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if ps.cpuTicks != 380 || ps.vsizeBytes != 1905438720 || ps.rssBytes != 4253*uint64(os.Getpagesize()) || start != 123456 {
		t.Fatalf("%+v start %d", ps, start)
	}
	if _, _, err := parseProcStat([]byte("4242 (x) S 1 2")); err == nil || !strings.Contains(err.Error(), "fields") {
		t.Fatalf("short line: %v", err)
	}
}

func TestFamilies_7_EveryServedFamilyListed(t *testing.T) {
	_, page, _ := scrape(t, New().Handler(unhealthySource()))
	fams := mustParse(t, page)
	listed := map[string]string{}
	for _, f := range Families() {
		listed[f.Name] = f.Type
	}
	for name, f := range fams {
		if listed[name] != f.typ {
			t.Errorf("%s (%s) served but Families says %q", name, f.typ, listed[name])
		}
	}
	if len(listed) != len(Families()) {
		t.Errorf("Families lists a name twice")
	}
}
