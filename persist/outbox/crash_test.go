package outbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "NICHEALTH_OUTBOX_HELPER"

// TestHelperProcess is not a test: it is the body of the child process the
// crash test starts and kills.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "appendloop" {
		t.Skip("child-process body; runs only when re-executed by another test")
	}
	appendLoop(os.Getenv("OUTBOX_DIR"), os.Getenv("RUN"), os.Getenv("TEAR") != "")
	os.Exit(0)
}

// appendLoop appends batches forever and prints "ok <first> <last>" after
// each Append returns: those seqs were promised durable. With tear, it
// stops after a few batches in the middle of writing a record, as a
// process killed inside write(2) does, and waits for its SIGKILL.
func appendLoop(dir, run string, tear bool) {
	o, err := Open(dir, Options{Sinks: []string{"t"}, SegmentBytes: 32 << 10})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	tearAt := rand.IntN(4)
	for i := 0; ; i++ {
		if tear && i == tearAt {
			ev := mkEvent(fatal, i)
			rec, _ := appendRecord(nil, o.nextSeq, &ev)
			o.mu.Lock()
			o.active.Write(rec[:1+rand.IntN(len(rec)-1)])
			fmt.Println("torn")
			time.Sleep(time.Hour)
		}
		n := 1 + rand.IntN(64)
		evs := mkEvents(nonFatal, i, n)
		for k := range evs {
			evs[k].ID = fmt.Sprintf("%s-%d-%d", run, i, k)
		}
		seqs, err := o.Append(evs)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("ok %d %d\n", seqs[0], seqs[len(seqs)-1])
	}
}

func TestOutbox_CrashDuringAppendLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 30 processes")
	}
	dir := t.TempDir()
	promised := map[uint64]bool{}
	log := &captured{}
	torn := 0
	for run := 0; run < 30; run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"=appendloop", "OUTBOX_DIR="+dir, "RUN="+strconv.Itoa(run))
		if run%3 == 0 {
			cmd.Env = append(cmd.Env, "TEAR=1")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child said %q", run, lines.Text())
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for lines.Scan() {
				f := strings.Fields(lines.Text())
				if lines.Text() == "torn" {
					torn++
					continue
				}
				if len(f) == 3 && f[0] == "ok" {
					a, _ := strconv.ParseUint(f[1], 10, 64)
					b, _ := strconv.ParseUint(f[2], 10, 64)
					for s := a; s <= b; s++ {
						promised[s] = true
					}
				} else {
					t.Errorf("run %d: child said %q", run, lines.Text())
				}
			}
		}()
		time.Sleep(time.Duration(rand.IntN(20000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		// Only the test's SIGKILL may end the child: a panic or an exit on
		// an append error is a broken promise, not noise.
		werr := cmd.Wait()
		var ee *exec.ExitError
		if ws, ok := exitStatus(werr, &ee); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: the child did not end by the test's SIGKILL (%v)\nstderr: %s", run, werr, stderr.String())
		}

		o, err := Open(dir, Options{Sinks: []string{"t"}, SegmentBytes: 32 << 10, Logger: slog.New(log)})
		if err != nil {
			t.Fatalf("run %d: Open after kill: %v", run, err)
		}
		recs := readAll(t, o, "t")
		o.Close()
		have := map[uint64]bool{}
		ids := map[string]bool{}
		var prev uint64
		for _, r := range recs {
			if r.Seq <= prev {
				t.Fatalf("run %d: seq %d after %d: not strictly increasing", run, r.Seq, prev)
			}
			if ids[r.Event.ID] {
				t.Fatalf("run %d: event %s stored twice", run, r.Event.ID)
			}
			prev = r.Seq
			have[r.Seq] = true
			ids[r.Event.ID] = true
		}
		for s := range promised {
			if !have[s] {
				t.Fatalf("run %d: seq %d was acknowledged by Append but is gone after the crash", run, s)
			}
		}
	}
	if len(promised) == 0 {
		t.Fatal("no append ever completed")
	}
	cut := 0
	for _, w := range log.warnings() {
		if strings.Contains(w, "interrupted append") {
			cut++
		}
	}
	if cut < torn {
		t.Fatalf("%d writes were torn but only %d torn tails were cut on reopen", torn, cut)
	}
	t.Logf("30 kills, %d appended seqs promised, %d writes torn, %d torn tails cut on reopen", len(promised), torn, cut)
}

// exitStatus is the wait status of a child that did not exit cleanly.
func exitStatus(err error, ee **exec.ExitError) (syscall.WaitStatus, bool) {
	if !errors.As(err, ee) {
		return 0, false
	}
	ws, ok := (*ee).Sys().(syscall.WaitStatus)
	return ws, ok
}
