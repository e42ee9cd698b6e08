package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

func simFail(t *testing.T, root, dev, port, rel, errno string) {
	t.Helper()
	out, err := exec.Command(simBinary(t), "fail", "--root", root, dev, port, rel, errno).CombinedOutput()
	if err != nil {
		t.Fatalf("nichealth-sim fail %s %s %s %s: %v\n%s", dev, port, rel, errno, err, out)
	}
}

// waitScrape waits until /metrics contains line.
func (v *viewNode) waitScrape(line string) {
	v.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !strings.Contains(v.scrape(), line) {
		if time.Now().After(deadline) {
			v.t.Fatalf("/metrics never showed %q:\n%s", line, v.scrape())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPolledFor waits until the daemon's last completed poll is d later
// than when called (nichealth_last_poll_timestamp_seconds).
func (v *viewNode) waitPolledFor(d time.Duration) {
	v.t.Helper()
	lastPoll := func() float64 {
		page := v.scrape()
		i := strings.Index(page, "\nnichealth_last_poll_timestamp_seconds ")
		if i < 0 {
			return 0
		}
		var f float64
		fmt.Sscan(strings.Fields(page[i+1:])[1], &f)
		return f
	}
	from := lastPoll()
	deadline := time.Now().Add(waitDeadline)
	for lastPoll() < from+d.Seconds() {
		if time.Now().After(deadline) {
			v.t.Fatalf("the daemon did not poll for %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A restricted function's counter file (EACCES, injected with the
// nichealth-sim binary) is parked: one read-parked event on its port,
// shown by nichealthctl port and check and counted by
// nichealth_parked_files; when the restriction is lifted the next
// re-probe reads it and read-resumed clears it everywhere. A temporary
// directory cannot fail with EACCES for root, so this test runs the
// simulate build, whose reader takes the simulator's errno table.
func TestParking_BlackBoxRestrictedCounterParkedAndResumed(t *testing.T) {
	t.Parallel()
	v := newViewNode(t)
	v.simulate() // the errno comes from nichealth-sim fail's table
	cfg, err := os.ReadFile(v.cfg)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(cfg), "[sinks.jsonl]", "parkReprobeInterval = \"300ms\"\n[sinks.jsonl]", 1)
	if err := os.WriteFile(v.cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	const dev, rel = "mlx5_4", "counters/symbol_error"
	file := filepath.Join(v.h.SysRoot(), "class/infiniband", dev, "ports/1", rel)
	v.start()
	v.waitReady()
	v.agree(verdictWant{dev, 1, "healthy"})
	v.waitScrape("nichealth_parked_files 0")

	skip := len(v.read())
	simFail(t, v.h.Root, dev, "1", rel, "EACCES")
	e := v.waitEventAfter(skip, "read-parked", portEvent(dev, event.KindReadParked))
	if e.IsFatal || e.IsHealthy || e.Metadata["file"] != file || e.Metadata["errno"] != "EACCES" || e.Port() != "1" {
		t.Fatalf("parked event %+v", e)
	}
	for _, want := range []string{dev, "port 1", file, "EACCES", "restricted"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("parked message lacks %q: %s", want, e.Message)
		}
	}
	v.agree(verdictWant{dev, 1, "degraded"})
	if out, _ := v.ctl("port", dev, "1"); !strings.Contains(out, rel) || !strings.Contains(out, "EACCES") {
		t.Errorf("nichealthctl port %s 1 does not show the parked file:\n%s", dev, out)
	}
	if out, code := v.ctl("check"); code != 1 || !strings.Contains(out, dev+"-") {
		t.Errorf("nichealthctl check (exit %d): %s", code, out)
	}
	v.waitScrape("nichealth_parked_files 1")
	v.waitScrape(fmt.Sprintf(`nichealth_parked_file{device="%s",port="1",file="%s"} 1`, dev, file))
	// Parked: reported once, not again at each failed re-probe.
	v.waitPolledFor(time.Second) // several 300 ms re-probes
	if n := count(v.read()[skip:], portEvent(dev, event.KindReadParked)); n != 1 {
		t.Fatalf("%d read-parked events, want 1", n)
	}

	skip = len(v.read())
	simFail(t, v.h.Root, dev, "1", rel, "off")
	c := v.waitEventAfter(skip, "read-resumed", portEvent(dev, event.KindReadResumed))
	if !c.IsHealthy || c.Metadata["file"] != file {
		t.Fatalf("resumed event %+v", c)
	}
	v.agree(verdictWant{dev, 1, "healthy"})
	v.waitScrape("nichealth_parked_files 0")
	v.cmd.Process.Signal(syscall.SIGTERM)
	v.cmd.Wait()
}
