package persist

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

// helperEnv selects what TestHelperProcess does when the test binary is
// re-executed as a child process.
const helperEnv = "NICHEALTH_PERSIST_HELPER"

// TestHelperProcess is not a test: it is the body of the child processes
// the crash and filesystem tests start.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("child-process body; runs only when re-executed by another test")
	case "saveloop":
		saveLoop(os.Getenv("STATE_PATH"))
	case "fsfaults":
		fsFaults(os.Getenv("MOUNT_DIR"))
	}
	os.Exit(0)
}

// saveLoop saves forever a state whose every counter holds the generation
// number and whose size changes with it, so a torn or mixed file shows.
func saveLoop(path string) {
	s := NewStore(path)
	for gen := uint64(1); ; gen++ {
		st := NewState(bootA)
		n := int(gen%17) + 1
		for i := 0; i < n; i++ {
			st.CounterSnapshots[fmt.Sprintf("mlx5_%d:1:symbol_error", i)] = CounterSnapshot{Value: gen, Timestamp: time.Unix(int64(gen), 0).UTC()}
		}
		if _, err := s.SaveIfChanged(st); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if gen == 1 {
			fmt.Println("ready")
		}
	}
}

func TestState_6_6_CrashDuringSaveNeverCorrupts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	path := filepath.Join(t.TempDir(), "state.json")
	for i := 0; i < 50; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"=saveloop", "STATE_PATH="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdout := bufio.NewReader(out)
		line, _ := stdout.ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child said %q; stderr: %s", line, stderr.String())
		}
		// The kill lands at a random point of the save loop: inside a
		// write, between fsync and rename, or between rename and the
		// directory fsync. The pause only spreads the kill points; no
		// outcome depends on its length.
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		rest, _ := io.ReadAll(stdout)
		assertKilled(t, fmt.Sprintf("kill %d", i), cmd.Wait(), line+string(rest), stderr.String())

		st, rep, err := LoadDetailed(path)
		if err != nil || rep.Status != LoadLoaded {
			t.Fatalf("kill %d: Load = %+v, %v; want a loadable file", i, rep, err)
		}
		var gen uint64
		for k, v := range st.CounterSnapshots {
			if gen == 0 {
				gen = v.Value
			}
			if v.Value != gen {
				t.Fatalf("kill %d: mixed generations in one file: %s=%d, want %d", i, k, v.Value, gen)
			}
		}
		if want := int(gen%17) + 1; len(st.CounterSnapshots) != want {
			t.Fatalf("kill %d: generation %d has %d snapshots, want %d", i, gen, len(st.CounterSnapshots), want)
		}
	}
	if _, err := os.Stat(path + CorruptSuffix); err == nil {
		t.Fatalf("a load found the file corrupt")
	}
	// Temporary files of killed saves are swept when the daemon next starts.
	if _, _, err := NewStore(path).Load(); err != nil {
		t.Fatal(err)
	}
	assertNoTemps(t, filepath.Dir(path))
}

// fsFaults runs inside a private mount namespace: it mounts a tiny tmpfs,
// fills it, and checks what a save does on a full and then a read-only
// filesystem. It prints "skip <why>", "ok", or "fail <why>".
func fsFaults(dir string) {
	fail := func(format string, a ...any) {
		fmt.Printf("fail "+format+"\n", a...)
		os.Exit(0)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		fmt.Println("skip cannot mount tmpfs:", err)
		os.Exit(0)
	}
	path := filepath.Join(dir, "state.json")
	small := NewState(bootA)
	if err := Save(path, small); err != nil {
		fail("first save: %v", err)
	}
	before, _ := os.ReadFile(path)

	// Fill the filesystem.
	f, _ := os.Create(filepath.Join(dir, "filler"))
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()

	err := Save(path, bigState())
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), path) {
		fail("save on a full filesystem = %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		fail("old file changed after ENOSPC")
	}
	s := NewStore(path)
	if saved, err := s.SaveIfChanged(bigState()); saved || err == nil {
		fail("SaveIfChanged on full fs = %v, %v", saved, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		fail("files left after ENOSPC: %v", names)
	}
	// Space comes back: the next poll's retry succeeds.
	os.Remove(filepath.Join(dir, "filler"))
	if saved, err := s.SaveIfChanged(bigState()); !saved || err != nil {
		fail("retry after freeing space = %v, %v", saved, err)
	}
	before, _ = os.ReadFile(path)

	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		fail("remount read-only: %v", err)
	}
	err = Save(path, sampleState())
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), "read-only") {
		fail("save on a read-only filesystem = %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		fail("old file changed after EROFS")
	}
	fmt.Println("ok")
}

// assertKilled fails the test unless the child ended by the SIGKILL the
// test sent: a child that panicked, exited on an error or was killed by
// anything else broke the promise under test, and is not a reason to skip.
func assertKilled(t *testing.T, what string, waitErr error, stdout, stderr string) {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return
		}
	}
	t.Fatalf("%s: the child did not end by the test's SIGKILL (%v)\nstdout: %s\nstderr: %s", what, waitErr, stdout, stderr)
}

func TestState_6_6_FullAndReadOnlyFilesystem(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=fsfaults", "MOUNT_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		// The unshare happens between fork and exec: without
		// CAP_SYS_ADMIN the child never starts.
		component.Missing(t, "cannot run in a private mount namespace (needs root or CAP_SYS_ADMIN): %v", err)
	}
	if err := cmd.Wait(); err != nil {
		// The child started: any non-zero exit (a panic on a write error,
		// an os.Exit on a path it should have survived) is a failure.
		t.Fatalf("fault child failed: %v\n%s", err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "ok"):
			return
		case strings.HasPrefix(line, "skip"):
			component.Missing(t, "%s", line)
		case strings.HasPrefix(line, "fail"):
			t.Fatal(line)
		}
	}
	t.Fatalf("child output: %s", out.String())
}
