package hangfs

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nichealth/nichealthd/internal/component"
)

// FS is a mounted pass-through filesystem whose file reads and writes can
// be made to hang.
type FS struct {
	// Dir is where it is mounted; Backing is the directory it shows.
	Dir, Backing string

	srv *fuse.Server

	mu      sync.Mutex
	reads   bool
	writes  bool
	release chan struct{} // closed when hanging operations may go on
	// Hung counts the operations that have waited since the last Hang.
	hung int
}

// Mount mounts a pass-through view of a fresh backing directory on a
// fresh directory, both under the test's temporary directory, and
// unmounts it when the test ends (after letting every hung operation
// go). A machine without root or /dev/fuse ends the test through
// component.Missing.
func Mount(t testing.TB) *FS {
	t.Helper()
	if os.Geteuid() != 0 {
		component.Missing(t, "mounting a FUSE filesystem needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		component.Missing(t, "no /dev/fuse (load the fuse module): %v", err)
	}
	base := t.TempDir()
	h := &FS{Dir: base + "/mnt", Backing: base + "/backing", release: make(chan struct{})}
	close(h.release)
	for _, d := range []string{h.Dir, h.Backing} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(h.Backing, &st); err != nil {
		t.Fatal(err)
	}
	root := &fs.LoopbackRoot{Path: h.Backing, Dev: uint64(st.Dev)}
	// Every node below the root is a node too (WrapChild), so a file
	// opened anywhere in the tree hangs on command.
	rootNode := &node{LoopbackNode: &fs.LoopbackNode{RootData: root}, fs: h}
	root.RootNode = rootNode
	sec := time.Second
	srv, err := fs.Mount(h.Dir, rootNode, &fs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec,
		MountOptions: fuse.MountOptions{DirectMountStrict: true, FsName: "hangfs", Name: "hangfs", AllowOther: true},
	})
	if err != nil {
		component.Missing(t, "mount FUSE on %s: %v", h.Dir, err)
	}
	h.srv = srv
	t.Cleanup(func() {
		h.Release()
		if err := srv.Unmount(); err != nil {
			exec.Command("umount", "-l", h.Dir).Run()
		}
	})
	return h
}

// Hang makes every later read (reads) and write (writes) of a regular
// file wait until Release.
func (h *FS) Hang(reads, writes bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads, h.writes, h.hung = reads, writes, 0
	h.release = make(chan struct{})
}

// Release lets every waiting and later operation go on.
func (h *FS) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads, h.writes = false, false
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// Hung is how many operations have hung since the last Hang.
func (h *FS) Hung() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hung
}

// wait blocks a read (write false) or a write while they are made to hang.
func (h *FS) wait(ctx context.Context, write bool) syscall.Errno {
	h.mu.Lock()
	hang := h.reads && !write || h.writes && write
	ch := h.release
	if hang {
		h.hung++
	}
	h.mu.Unlock()
	if !hang {
		return 0
	}
	select {
	case <-ch:
		return 0
	case <-ctx.Done():
		// The caller was killed (FUSE interrupts a request on a fatal
		// signal).
		return syscall.EINTR
	}
}

// node is a loopback node whose open files hang on command.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

// WrapChild makes each new child of a node a node of its own.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{inner: fh, fs: n.fs}, fl | fuse.FOPEN_DIRECT_IO, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, &file{inner: fh, fs: n.fs}, fl | fuse.FOPEN_DIRECT_IO, 0
}

// file passes every operation to the loopback file, after waiting in
// Read and Write while they hang.
type file struct {
	inner fs.FileHandle
	fs    *FS
}

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := f.fs.wait(ctx, false); errno != 0 {
		return nil, errno
	}
	return f.inner.(fs.FileReader).Read(ctx, dest, off)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.fs.wait(ctx, true); errno != 0 {
		return 0, errno
	}
	return f.inner.(fs.FileWriter).Write(ctx, data, off)
}

func (f *file) Flush(ctx context.Context) syscall.Errno {
	if fl, ok := f.inner.(fs.FileFlusher); ok {
		return fl.Flush(ctx)
	}
	return 0
}

func (f *file) Release(ctx context.Context) syscall.Errno {
	if r, ok := f.inner.(fs.FileReleaser); ok {
		return r.Release(ctx)
	}
	return 0
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if s, ok := f.inner.(fs.FileFsyncer); ok {
		return s.Fsync(ctx, flags)
	}
	return 0
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if g, ok := f.inner.(fs.FileGetattrer); ok {
		return g.Getattr(ctx, out)
	}
	return syscall.ENOSYS
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if s, ok := f.inner.(fs.FileSetattrer); ok {
		return s.Setattr(ctx, in, out)
	}
	return syscall.ENOSYS
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	if l, ok := f.inner.(fs.FileLseeker); ok {
		return l.Lseek(ctx, off, whence)
	}
	return 0, syscall.ENOSYS
}
