package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FailFile makes every read of a port file fail with errno (EIO, EINVAL,
// EOPNOTSUPP, EACCES, EPERM, ENOENT, ENODEV, EBUSY), or stops that with
// "off". A regular file on a temporary directory cannot make the kernel
// return EIO or EINVAL, so the host's errno table (ErrnoTableName, one
// "ERRNO path" line per file, the path relative to H/sys) says which
// files must, and a reader given that table (NewErrnoTable: a test, or
// nichealthd built with the simulate tag) replaces the outcome of the
// real read. The production daemon never reads it.
func (h *Host) FailFile(dev string, port int, rel, errno string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, err := h.existingPortFile(dev, port, rel)
	if err != nil {
		return err
	}
	key, err := filepath.Rel(h.SysRoot(), p)
	if err != nil {
		return fmt.Errorf("fail %s: %w", p, err)
	}
	off := strings.EqualFold(errno, "off")
	if _, ok := ErrnoByName(errno); !ok && !off {
		return fmt.Errorf("unknown errno %q: want EIO, EINVAL, EOPNOTSUPP, EACCES, EPERM, ENOENT, ENODEV, EBUSY or off", errno)
	}
	table := filepath.Join(h.Root, ErrnoTableName)
	failing, err := readInjectTable(table)
	if err != nil {
		return err
	}
	if off {
		delete(failing, key)
	} else {
		failing[key] = strings.ToUpper(errno)
	}
	return writeAtomic(h.Root, table, formatInjectTable(failing))
}

// FailingFiles returns the injected errno of each failing file, keyed by
// its path relative to H/sys.
func (h *Host) FailingFiles() (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return readInjectTable(filepath.Join(h.Root, ErrnoTableName))
}

func readInjectTable(path string) (map[string]string, error) {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rel, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if ok && !strings.HasPrefix(name, "#") {
			out[strings.TrimSpace(rel)] = name
		}
	}
	return out, nil
}

func formatInjectTable(failing map[string]string) []byte {
	keys := make([]string, 0, len(failing))
	for k := range failing {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("# ERRNO path-relative-to-sys, written by nichealth-sim fail\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", failing[k], k)
	}
	return b.Bytes()
}
