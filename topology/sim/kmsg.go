package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/kmsg"
)

// kmsgSeqName keeps the last sequence number written, beside the
// manifest, so records written by several processes (a test and the CLI)
// keep increasing as the kernel's do.
const kmsgSeqName = ".nichealth-sim-kmsg-seq"

// kmsgWait bounds how long WriteKmsg waits for a reader of H/dev/kmsg (the
// daemon opens it when its loop starts).
const kmsgWait = 30 * time.Second

// KmsgPath is H/dev/kmsg: a FIFO that stands in for /dev/kmsg.
func (h *Host) KmsgPath() string { return filepath.Join(h.DevRoot(), "kmsg") }

// makeKmsg creates the FIFO (Build does).
func (h *Host) makeKmsg() error {
	if err := syscall.Mkfifo(h.KmsgPath(), 0o644); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make %s: %w", h.KmsgPath(), err)
	}
	return nil
}

// KmsgDict returns the dictionary the kernel gives a record printed for
// a NIC's PCI function (dev_err and friends): SUBSYSTEM=pci and
// DEVICE=+pci:<address>.
func (h *Host) KmsgDict(nic string) (subsystem, device string, err error) {
	d, ok := h.Device(nic)
	if !ok {
		return "", "", fmt.Errorf("kmsg: no device %q on this host", nic)
	}
	return "pci", "+pci:" + d.PCIAddress, nil
}

// WriteKmsg writes records into H/dev/kmsg in the kernel's format, one
// write each, as /dev/kmsg hands them out. A record without a sequence
// number gets the next one, without a timestamp the monotonic clock's
// now (what the kernel stamps); a record with a sequence number sets the
// next one after it (so a test can leave a gap, as a ring overrun does).
// It waits for a reader to open the FIFO, at most kmsgWait. It returns
// the sequence numbers written.
func (h *Host) WriteKmsg(recs ...kmsg.Record) ([]uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, err := openFIFOWriter(h.KmsgPath(), kmsgWait)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seqPath := filepath.Join(h.Root, kmsgSeqName)
	last := uint64(0)
	if b, err := os.ReadFile(seqPath); err == nil {
		last, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	seqs := make([]uint64, 0, len(recs))
	var werr error
	for _, r := range recs {
		if r.Seq == 0 {
			r.Seq = last + 1
		}
		if r.TS == 0 {
			var ts unix.Timespec
			if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err == nil {
				r.TS = time.Duration(ts.Nano())
			}
		}
		if _, err := f.Write(kmsg.Format(r)); err != nil {
			werr = fmt.Errorf("write %s: %w", h.KmsgPath(), err)
			break
		}
		last = max(last, r.Seq)
		seqs = append(seqs, r.Seq)
	}
	if err := writeAtomic(h.Root, seqPath, []byte(strconv.FormatUint(last, 10)+"\n")); err != nil && werr == nil {
		werr = err
	}
	return seqs, werr
}

// openFIFOWriter opens a FIFO for writing once a reader holds it: a
// non-blocking open says ENXIO until then (a blocking one could wait for
// ever), and the writes themselves block, as a writer's should.
func openFIFOWriter(path string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			if err := unix.SetNonblock(fd, false); err != nil {
				unix.Close(fd)
				return nil, fmt.Errorf("open %s: %w", path, err)
			}
			return os.NewFile(uintptr(fd), path), nil
		}
		if !errors.Is(err, unix.ENXIO) || time.Now().After(deadline) {
			if errors.Is(err, unix.ENXIO) {
				return nil, fmt.Errorf("open %s: no reader within %v (is nichealthd running with devRoot = %s?)", path, wait, filepath.Dir(path))
			}
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
