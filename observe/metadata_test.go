package observe

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/hangfs"
	"github.com/nichealth/nichealthd/internal/syncbuf"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// Every read has a deadline: gpu_metadata.json on a filesystem whose reads
// hang (a hung NFS server under /etc/nvsentinel) costs a discovery the
// read deadline, never the poll loop. In auto mode the roles come from
// sysfs meanwhile and the reason is said; the next discovery joins the read
// still hung instead of blocking another thread; once the filesystem
// answers, the file is used again.
func TestDesign_7_MetadataOnHungFilesystemNeverStallsDiscovery(t *testing.T) {
	h, err := sim.Build(simtest.TempDir(t), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	fs := hangfs.Mount(t)
	b, err := os.ReadFile(h.MetadataPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fs.Backing, "gpu_metadata.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var logb syncbuf.Buffer
	paths := topology.Paths{SysfsRoot: h.SysRoot(), ProcfsRoot: h.ProcRoot(), DevRoot: h.DevRoot()}.WithDefaults()
	o := New(Config{Paths: paths, PollInterval: time.Millisecond, ReadTimeout: 50 * time.Millisecond, MaxStuckReads: 4,
		TopologySource: "auto", MetadataPath: filepath.Join(fs.Dir, "gpu_metadata.json")}, BootFresh,
		slog.New(slog.NewTextHandler(&logb, nil)), Seams{}, nil)
	t.Cleanup(o.Close)
	if err := o.Discover(); err != nil {
		t.Fatal(err)
	}
	if o.matrix == nil || !strings.HasPrefix(o.matrix.Source, "metadata") {
		t.Fatalf("before the hang the metadata file is the source: %+v", o.matrix)
	}

	fs.Hang(true, false)
	for i := range 3 {
		done := make(chan error, 1)
		go func() { done <- o.Discover() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("discovery %d with the metadata file hung: %v", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("discovery %d waits on a hung gpu_metadata.json", i)
		}
		if o.matrix == nil || strings.HasPrefix(o.matrix.Source, "metadata") {
			t.Fatalf("discovery %d: roles not from sysfs while the file hangs: %+v", i, o.matrix)
		}
	}
	if n := fs.Hung(); n != 1 {
		t.Errorf("%d metadata reads hang in the kernel after 3 discoveries, want 1 (joined)", n)
	}
	if !strings.Contains(logb.String(), "no answer within") {
		t.Errorf("the hung read is not said:\n%s", logb.String())
	}

	fs.Release()
	deadline := time.Now().Add(time.Minute)
	for {
		if err := o.Discover(); err != nil {
			t.Fatal(err)
		}
		if o.matrix != nil && strings.HasPrefix(o.matrix.Source, "metadata") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metadata file is not used again once the filesystem answers: %+v", o.matrix)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
