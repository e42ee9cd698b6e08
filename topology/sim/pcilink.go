package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PCIe link speeds as current kernels print them.
const (
	pcieGen3 = "8.0 GT/s PCIe"
	pcieGen4 = "16.0 GT/s PCIe"
	pcieGen5 = "32.0 GT/s PCIe"
)

// linkMax is what a PCI function's end of its link supports: root ports
// are Gen5 x16, switch ports Gen5 x16 unless their switch is older
// (linkSpeed), endpoints as their model says.
func (n *pciNode) linkMax(speed, width string) (string, string) {
	if n.kind != kindBridge {
		return speed, width
	}
	if n.linkSpeed != "" {
		return n.linkSpeed, "16"
	}
	return pcieGen5, "16"
}

// linkCurrent is what the link trained to: the lesser of both ends. A root
// port or switch downstream port reports the link to the device below it,
// a switch upstream port the link to the port above it, an endpoint the
// link to its slot.
func (b *builder) linkCurrent(n *pciNode, maxSpeed, maxWidth string) (string, string) {
	var other *pciNode
	switch {
	case n.kind == kindBridge && !n.upstream:
		if len(n.children) > 0 {
			other = n.children[0]
		}
	default:
		other = n.parent
	}
	if other == nil {
		return maxSpeed, maxWidth
	}
	otherSpeed, otherWidth := b.nodeMax(other)
	return minSpeed(maxSpeed, otherSpeed), minWidth(maxWidth, otherWidth)
}

// nodeMax is linkMax with an endpoint's own speed and width.
func (b *builder) nodeMax(n *pciNode) (string, string) {
	switch n.kind {
	case kindGPU:
		return n.gpuModel.pciSpeed, "16"
	case kindHCA:
		return n.hca.model.pciSpeed, "16"
	case kindPlainNIC:
		return pcieGen4, "8"
	}
	return n.linkMax("", "")
}

func minSpeed(a, b string) string {
	na, _, _ := strings.Cut(a, " ")
	nb, _, _ := strings.Cut(b, " ")
	fa, _ := strconv.ParseFloat(na, 64)
	fb, _ := strconv.ParseFloat(nb, 64)
	if fb < fa {
		return b
	}
	return a
}

func minWidth(a, b string) string {
	wa, _ := strconv.Atoi(a)
	wb, _ := strconv.Atoi(b)
	if wb < wa {
		return b
	}
	return a
}

// writeLink writes the four link attributes of a PCI function; speed and
// width are an endpoint's own capability (ignored for bridges).
func (b *builder) writeLink(dir string, n *pciNode, speed, width string) {
	maxSpeed, maxWidth := n.linkMax(speed, width)
	curSpeed, curWidth := b.linkCurrent(n, maxSpeed, maxWidth)
	b.w.file(dir+"/current_link_speed", curSpeed+"\n")
	b.w.file(dir+"/max_link_speed", maxSpeed+"\n")
	b.w.file(dir+"/current_link_width", curWidth+"\n")
	b.w.file(dir+"/max_link_width", maxWidth+"\n")
}

// switchesAt sets the maximum link speed of every switch port below root
// port rp: the A100 generation's PCIe switches are Gen4.
func (rp *pciNode) switchesAt(speed string) {
	for _, c := range rp.children {
		if c.kind == kindBridge {
			c.linkSpeed = speed
			c.switchesAt(speed)
		}
	}
}

// SetPCIeLink sets the current link speed and/or width of a PCI function:
// target is a PCI address (any bridge, switch port, root port or endpoint
// of the tree) or a NIC name, meaning the port above the NIC (the switch
// downstream port or root port its card sits in). speed is a number of
// GT/s ("16", "8.0"), a kernel string ("16.0 GT/s PCIe") or "Unknown";
// width a lane count ("8", "x8"). An empty value leaves that file alone.
// It returns the PCI address it changed. Only the named function's files
// change: a test downtrains exactly the hop it names.
func (h *Host) SetPCIeLink(target, speed, width string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.pciDirLocked(target)
	if err != nil {
		return "", err
	}
	var sp, wd string
	if speed != "" {
		if sp, err = normalizeLinkSpeed(speed); err != nil {
			return "", err
		}
	}
	if width != "" {
		if wd, err = normalizeLinkWidth(width); err != nil {
			return "", err
		}
	}
	for name, v := range map[string]string{"current_link_speed": sp, "current_link_width": wd} {
		if v == "" {
			continue
		}
		if err := writeAtomic(h.Root, filepath.Join(dir, name), []byte(v+"\n")); err != nil {
			return "", err
		}
	}
	return filepath.Base(dir), nil
}

// PCIeLinkMax is the max_link_speed and max_link_width of a target as
// SetPCIeLink understands it, so a test can restore the trained link.
func (h *Host) PCIeLinkMax(target string) (speed, width string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.pciDirLocked(target)
	if err != nil {
		return "", "", err
	}
	s, err := os.ReadFile(filepath.Join(dir, "max_link_speed"))
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", filepath.Join(dir, "max_link_speed"), err)
	}
	w, err := os.ReadFile(filepath.Join(dir, "max_link_width"))
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", filepath.Join(dir, "max_link_width"), err)
	}
	return strings.TrimSpace(string(s)), strings.TrimSpace(string(w)), nil
}

// pciDirLocked resolves a PCI address or a NIC name (its parent port) to a
// directory of the tree; h.mu must be held.
func (h *Host) pciDirLocked(target string) (string, error) {
	if d, err := h.deviceLocked(target); err == nil {
		fn, err := filepath.EvalSymlinks(filepath.Join(h.SysRoot(), d.PCIPath))
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", d.PCIPath, err)
		}
		return filepath.Dir(fn), nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(h.SysRoot(), "bus", "pci", "devices", target))
	if err != nil {
		return "", fmt.Errorf("%q is neither a NIC nor a PCI address on simulated host %s (see nichealth-sim list)", target, h.Root)
	}
	return dir, nil
}

func normalizeLinkSpeed(s string) (string, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "unknown") {
		return "Unknown", nil
	}
	num, _, _ := strings.Cut(t, " ")
	g, err := strconv.ParseFloat(num, 64)
	if err != nil || g <= 0 {
		return "", fmt.Errorf("bad PCIe link speed %q: want GT/s such as 16, 32.0 GT/s PCIe or Unknown", s)
	}
	return strconv.FormatFloat(g, 'f', 1, 64) + " GT/s PCIe", nil
}

func normalizeLinkWidth(s string) (string, error) {
	w, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(s), "x"))
	if err != nil || w < 0 || w > 32 {
		return "", fmt.Errorf("bad PCIe link width %q: want a lane count such as 8 or x16", s)
	}
	return strconv.Itoa(w), nil
}
