package persist

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// orderFS is the real file system with every call written to a log, so a
// test can check the order that makes a save durable.
type orderFS struct {
	osFS
	dir     string
	log     []string
	failOn  string // fail the first call whose log entry starts with this
	failErr error
}

func (o *orderFS) note(entry string) error {
	o.log = append(o.log, entry)
	if o.failOn != "" && strings.HasPrefix(entry, o.failOn) {
		o.failOn = ""
		return o.failErr
	}
	return nil
}

// name keeps log entries stable: the temporary file's random suffix is
// replaced by "tmp".
func (o *orderFS) name(p string) string {
	rel, _ := filepath.Rel(o.dir, p)
	if i := strings.Index(rel, tempInfix); i >= 0 {
		return rel[:i] + ".tmp"
	}
	return rel
}

func (o *orderFS) CreateExclusive(name string, perm os.FileMode) (syncFile, error) {
	if err := o.note("create " + o.name(name)); err != nil {
		return nil, err
	}
	f, err := o.osFS.CreateExclusive(name, perm)
	if err != nil {
		return nil, err
	}
	return &orderFile{f: f, fs: o, name: o.name(name)}, nil
}

func (o *orderFS) Rename(a, b string) error {
	if err := o.note("rename " + o.name(a) + " " + o.name(b)); err != nil {
		return err
	}
	return o.osFS.Rename(a, b)
}

func (o *orderFS) Remove(name string) error {
	o.note("remove " + o.name(name))
	return o.osFS.Remove(name)
}

func (o *orderFS) SyncDir(dir string) error {
	if err := o.note("fsync-dir " + o.name(dir)); err != nil {
		return err
	}
	return o.osFS.SyncDir(dir)
}

type orderFile struct {
	f    syncFile
	fs   *orderFS
	name string
}

func (f *orderFile) Write(b []byte) (int, error) {
	if err := f.fs.note("write " + f.name); err != nil {
		return 0, err
	}
	return f.f.Write(b)
}

func (f *orderFile) Sync() error {
	if err := f.fs.note("fsync " + f.name); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *orderFile) Close() error {
	err := f.fs.note("close " + f.name)
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestState_6_6_SaveFsyncOrder: the new content is fsynced before the
// rename makes it the state file, and the directory is fsynced after the
// rename so the new name survives a power cut. Either step missing, or in
// another order, can leave an empty or old state file after a crash that
// the kill tests (which do not cut power) never see.
func TestState_6_6_SaveFsyncOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	o := &orderFS{dir: dir}
	b, err := Encode(sampleState())
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(o, path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"create state.json.tmp",
		"write state.json.tmp",
		"fsync state.json.tmp",
		"close state.json.tmp",
		"rename state.json.tmp state.json",
		"fsync-dir .",
	}
	if !reflect.DeepEqual(o.log, want) {
		t.Fatalf("calls:\n  %s\nwant:\n  %s", strings.Join(o.log, "\n  "), strings.Join(want, "\n  "))
	}
	if got, _ := os.ReadFile(path); string(got) != string(b) {
		t.Fatal("state file does not hold what was saved")
	}
}

// TestState_6_6_SaveStepFailureKeepsOldFile: a failure at any step before
// the rename leaves the old file and no temporary file, and the rename is
// never attempted with data that was not fsynced.
func TestState_6_6_SaveStepFailureKeepsOldFile(t *testing.T) {
	boom := errors.New("injected I/O error")
	for _, step := range []string{"create", "write", "fsync state", "close", "rename"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := Save(path, sampleState()); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			o := &orderFS{dir: dir, failOn: step, failErr: boom}
			st := sampleState()
			st.KnownDevices = append(st.KnownDevices, "mlx5_9")
			b, _ := Encode(st)
			if err := writeFileAtomic(o, path, b, 0o600); !errors.Is(err, boom) {
				t.Fatalf("error = %v, want the injected one", err)
			}
			for _, e := range o.log {
				if strings.HasPrefix(e, "rename") && step != "rename" {
					t.Fatalf("renamed after a failed %s: %v", step, o.log)
				}
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatal("old state file changed")
			}
			assertNoTemps(t, dir)
		})
	}
}

// TestState_6_6_DirectoryFsyncFailureReported: the rename happened but may
// not survive a power cut; the caller must hear about it and save again.
func TestState_6_6_DirectoryFsyncFailureReported(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("injected EIO on directory fsync")
	o := &orderFS{dir: dir, failOn: "fsync-dir", failErr: boom}
	if err := writeFileAtomic(o, filepath.Join(dir, "state.json"), []byte("{}\n"), 0o600); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want the directory fsync failure", err)
	}
}
