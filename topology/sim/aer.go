package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The kernel's AER counter names (drivers/pci/pcie/aer.c), one per AER
// status bit, in the order it prints them.
var (
	aerCorrectable   = []string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"}
	aerUncorrectable = []string{"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
		"ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"}
)

// AER classes as the Host's AER methods name them, with their files and
// TOTAL_ERR_* lines.
type aerClass struct{ file, total, root string }

var aerClasses = map[string]aerClass{
	"correctable": {"aer_dev_correctable", "TOTAL_ERR_COR", "aer_rootport_total_err_cor"},
	"nonfatal":    {"aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "aer_rootport_total_err_nonfatal"},
	"fatal":       {"aer_dev_fatal", "TOTAL_ERR_FATAL", "aer_rootport_total_err_fatal"},
}

// aerClassOf names the files and TOTAL_ERR_ line of an AER class.
func aerClassOf(class string) (aerClass, error) {
	c, ok := aerClasses[class]
	if !ok {
		return c, fmt.Errorf("unknown AER class %q (correctable, nonfatal or fatal)", class)
	}
	return c, nil
}

func aerZero(names []string, total string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + " 0\n")
	}
	return b.String() + total + " 0\n"
}

// writeAER gives a NIC function, switch port or root port its AER files,
// all zero (a healthy boot).
func (b *builder) writeAER(n *pciNode, dir string) {
	if b.opts.NoAER || (n.kind != kindBridge && n.kind != kindHCA) || (n.hca != nil && n.hca.isVF) {
		return
	}
	for cl, c := range aerClasses {
		names := aerUncorrectable
		if cl == "correctable" {
			names = aerCorrectable
		}
		b.w.file(dir+"/"+c.file, aerZero(names, c.total))
		if n.rootPort {
			b.w.file(dir+"/"+c.root, "0\n")
		}
	}
}

// pciDir resolves a PCI function's directory through bus/pci/devices.
func (h *Host) pciDir(pci string) (string, error) {
	d, err := filepath.EvalSymlinks(filepath.Join(h.SysRoot(), "bus", "pci", "devices", pci))
	if err != nil {
		return "", fmt.Errorf("no PCI function %q on simulated host %s: %w", pci, h.Root, err)
	}
	return d, nil
}

// AERAbove returns the PCI address of the function directly above a NIC:
// its switch downstream port or root port.
func (h *Host) AERAbove(nic string) (string, error) {
	h.mu.Lock()
	d, err := h.deviceLocked(nic)
	h.mu.Unlock()
	if err != nil {
		return "", err
	}
	dir, err := h.pciDir(d.PCIAddress)
	if err != nil {
		return "", err
	}
	up := filepath.Base(filepath.Dir(dir))
	if strings.HasPrefix(up, "pci") {
		return "", fmt.Errorf("%s (%s) sits directly on host bridge %s", nic, d.PCIAddress, up)
	}
	return up, nil
}

// AddAER adds n errors named name (e.g. BadTLP, CmpltTO, MalfTLP) of class
// correctable, nonfatal or fatal to a PCI function, with its TOTAL_ERR_*
// line and, on a root port, its aer_rootport_total_err_* file.
func (h *Host) AddAER(pci, class, name string, n uint64) error {
	c, err := aerClassOf(class)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.pciDir(pci)
	if err != nil {
		return err
	}
	p := filepath.Join(dir, c.file)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w (ResetAER puts the AER files back)", p, err)
	}
	out, found := addAERLine(string(b), name, c.total, n)
	if !found {
		return fmt.Errorf("%s has no counter %q", p, name)
	}
	if err := writeAtomic(h.Root, p, []byte(out)); err != nil {
		return err
	}
	rp := filepath.Join(dir, c.root)
	if rb, err := os.ReadFile(rp); err == nil {
		v, _ := strconv.ParseUint(strings.TrimSpace(string(rb)), 10, 64)
		return writeAtomic(h.Root, rp, []byte(strconv.FormatUint(v+n, 10)+"\n"))
	}
	return nil
}

func addAERLine(content, name, total string, n uint64) (string, bool) {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	found := false
	for i, l := range lines {
		k, v, _ := strings.Cut(l, " ")
		if k == name || k == total {
			cur, _ := strconv.ParseUint(v, 10, 64)
			lines[i] = k + " " + strconv.FormatUint(cur+n, 10)
			found = found || k == name
		}
	}
	return strings.Join(lines, "\n") + "\n", found
}

// ResetAER zeroes a function's AER counters, as a device reset does.
func (h *Host) ResetAER(pci string) error {
	return h.rewriteAER(pci, true)
}

// RemoveAER deletes a function's AER files: a kernel without AER
// statistics, or AER disabled by firmware.
func (h *Host) RemoveAER(pci string) error {
	return h.rewriteAER(pci, false)
}

func (h *Host) rewriteAER(pci string, zero bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.pciDir(pci)
	if err != nil {
		return err
	}
	_, rerr := os.Stat(filepath.Join(dir, aerClasses["correctable"].root))
	for cl, c := range aerClasses {
		names := aerUncorrectable
		if cl == "correctable" {
			names = aerCorrectable
		}
		files := map[string]string{c.file: aerZero(names, c.total)}
		if rerr == nil {
			files[c.root] = "0\n"
		}
		for f, data := range files {
			p := filepath.Join(dir, f)
			if !zero {
				if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
					return fmt.Errorf("remove %s: %w", p, err)
				}
				continue
			}
			if err := writeAtomic(h.Root, p, []byte(data)); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteAER writes content verbatim as a function's AER file of class
// (malformed lines, a future kernel's new names).
func (h *Host) WriteAER(pci, class, content string) error {
	c, err := aerClassOf(class)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.pciDir(pci)
	if err != nil {
		return err
	}
	return writeAtomic(h.Root, filepath.Join(dir, c.file), []byte(content))
}
