package farend

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/hangfs"
	"github.com/nichealth/nichealthd/mad/wire"
)

var leaf1 = wire.Peer{NodeGUID: "0xb83fd20300a01000", Description: "MF0;ibsw-leaf1:MQM8700/U1"}

// refreshWithin runs one refresh and fails the test when it does not
// return within limit.
func refreshWithin(t *testing.T, n *names, cfg PeerConfig, log *slog.Logger, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		n.refresh(cfg, log, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("the node-name map's refresh did not return within %v", limit)
	}
}

// TestIssue40Row2_NodeNameMapFIFONeverHangs: a map that became a FIFO
// (no writer) is refused at once with a reason naming it; peers keep
// their NodeDescription; once a regular file is back it is read.
func TestIssue40Row2_NodeNameMapFIFONeverHangs(t *testing.T) {
	m := filepath.Join(t.TempDir(), "ib-node-name-map")
	if err := syscall.Mkfifo(m, 0o644); err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logb, nil))
	cfg := PeerConfig{NodeNameMap: m}
	var n names
	for range 3 {
		refreshWithin(t, &n, cfg, log, 2*time.Second)
	}
	if got := n.name(leaf1); got != "MF0;ibsw-leaf1:MQM8700/U1" {
		t.Errorf("with a FIFO for a map: %q", got)
	}
	if c := strings.Count(logb.String(), "node-name map not used"); c != 1 || !strings.Contains(logb.String(), "is not a regular file") || !strings.Contains(logb.String(), m) {
		t.Errorf("said %d times, want once with the file and the reason:\n%s", c, logb.String())
	}
	os.Remove(m)
	if err := os.WriteFile(m, []byte("0xb83fd20300a01000 \"ibsw-leaf1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refreshWithin(t, &n, cfg, log, 2*time.Second)
	if got := n.name(leaf1); got != "ibsw-leaf1" {
		t.Errorf("after the FIFO was replaced: %q", got)
	}
}

// TestIssue40Row2_NodeNameMapOnHungFilesystem: a map whose reads hang (a
// hung NFS server) costs each refresh its deadline, never more; the
// rounds that follow join the one pending read instead of adding
// another; once the filesystem answers, the map is read again.
func TestIssue40Row2_NodeNameMapOnHungFilesystem(t *testing.T) {
	h := hangfs.Mount(t)
	m := filepath.Join(h.Dir, "ib-node-name-map")
	if err := os.WriteFile(m, []byte("0xb83fd20300a01000 \"ibsw-leaf1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := PeerConfig{NodeNameMap: m}
	n := names{deadline: 50 * time.Millisecond}
	var logb bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logb, nil))
	refreshWithin(t, &n, cfg, log, 2*time.Second)
	if got := n.name(leaf1); got != "ibsw-leaf1" {
		t.Fatalf("before the hang: %q", got)
	}
	if err := os.WriteFile(filepath.Join(h.Backing, "ib-node-name-map"), []byte("0xb83fd20300a01000 \"leaf-one\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Hang(true, false)
	for range 5 {
		refreshWithin(t, &n, cfg, log, 2*time.Second)
	}
	if hung := h.Hung(); hung != 1 {
		t.Errorf("%d reads hang in the kernel after 5 refreshes, want 1 (joined)", hung)
	}
	if !strings.Contains(logb.String(), "no answer within") {
		t.Errorf("the hang is not said:\n%s", logb.String())
	}
	h.Release()
	deadline := time.Now().Add(10 * time.Second)
	for n.name(leaf1) != "leaf-one" {
		if time.Now().After(deadline) {
			t.Fatalf("after the filesystem answered: %q", n.name(leaf1))
		}
		refreshWithin(t, &n, cfg, log, 2*time.Second)
		time.Sleep(10 * time.Millisecond)
	}
}
