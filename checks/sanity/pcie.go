package sanity

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// pcieLink is what a PCI device directory says about its link. A zero
// field is unknown (file missing, "Unknown" speed, width 0).
type pcieLink struct {
	curSpeed, maxSpeed float64 // GT/s
	curSpeedText       string  // "16.0 GT/s" as the kernel prints it, without " PCIe"
	maxSpeedText       string
	curWidth, maxWidth int
	present            bool // at least one of the four files exists
}

// readLink reads the four link attributes of a PCI device directory.
// Missing files leave their field unknown; a file that exists but cannot
// be read or parsed is an error.
func readLink(dir string, readFile topology.ReadFunc) (pcieLink, error) {
	var l pcieLink
	var errs []error
	read := func(name string) ([]byte, bool) {
		p := filepath.Join(dir, name)
		b, err := readFile(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("read %s: %w", p, err))
			}
			return nil, false
		}
		l.present = true
		return b, true
	}
	speed := func(name string, v *float64, text *string) {
		b, ok := read(name)
		if !ok {
			return
		}
		g, t, err := parseLinkSpeed(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, name), err))
			return
		}
		*v, *text = g, t
	}
	width := func(name string, v *int) {
		b, ok := read(name)
		if !ok {
			return
		}
		w, err := parseLinkWidth(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, name), err))
			return
		}
		*v = w
	}
	speed("current_link_speed", &l.curSpeed, &l.curSpeedText)
	speed("max_link_speed", &l.maxSpeed, &l.maxSpeedText)
	width("current_link_width", &l.curWidth)
	width("max_link_width", &l.maxWidth)
	return l, errors.Join(errs...)
}

// parseLinkSpeed parses current_link_speed / max_link_speed: "32.0 GT/s
// PCIe" on current kernels, "8 GT/s" or "2.5 GT/s" on older ones. The
// kernel prints "Unknown" (or "Unknown speed") when it cannot tell, e.g.
// while the link retrains: that is (0, "", nil), unknown rather than bad.
func parseLinkSpeed(b []byte) (float64, string, error) {
	b = sysfs.TrimValue(b)
	if len(b) == 0 {
		return 0, "", fmt.Errorf("%w: empty link speed", sysfs.ErrUnreadable)
	}
	if bytes.HasPrefix(b, []byte("Unknown")) {
		return 0, "", nil
	}
	num, rest, _ := bytes.Cut(b, []byte(" "))
	g, err := strconv.ParseFloat(string(num), 64)
	if err != nil || g <= 0 || g > 1e4 || g != g {
		return 0, "", fmt.Errorf("%w: link speed %q is not \"N GT/s\"", sysfs.ErrUnreadable, b)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("GT/s")) {
		return 0, "", fmt.Errorf("%w: link speed %q is not in GT/s", sysfs.ErrUnreadable, b)
	}
	return g, string(num) + " GT/s", nil
}

// parseLinkWidth parses current_link_width / max_link_width ("16"; some
// kernels print "x16"). 0 means the link is down: unknown, not x0.
func parseLinkWidth(b []byte) (int, error) {
	b = bytes.TrimPrefix(sysfs.TrimValue(b), []byte("x"))
	w, err := strconv.Atoi(string(b))
	if err != nil || w < 0 || w > 64 {
		return 0, fmt.Errorf("%w: link width %q is not a lane count", sysfs.ErrUnreadable, b)
	}
	return w, nil
}

// PCIe compares the HCA's PCIe link with what it is capable of (seed: "PCI
// width/speed of each HCA: identify failed hardware or firmware issues,
// appropriate slot placement"). Outcomes:
//   - (finding, nil): the link runs below the card's maximum speed or width
//     and the slot is not the reason. Kind is pcie-width when lanes are
//     missing (with or without a speed loss: the card is likely badly
//     seated), pcie-speed when only the speed is low;
//   - (nil, nil): the link is as capable as the card, or the upstream
//     bridge (the parent directory, when it has the same attributes) is
//     itself limited to the HCA's current value — a Gen4 slot under a Gen5
//     card is placement, not failure, and never changes at run time — or
//     the attributes are missing or say "Unknown";
//   - (nil, err): an attribute exists but cannot be read or parsed.
func PCIe(dev *topology.Device) (*Finding, error) { return pcieWith(dev, nil) }

// pcieWith is PCIe reading attributes with read (os.ReadFile when nil).
func pcieWith(dev *topology.Device, read topology.ReadFunc) (*Finding, error) {
	if dev == nil || dev.PCIDir == "" {
		return nil, nil
	}
	if read == nil {
		read = os.ReadFile
	}
	hca, err := readLink(dev.PCIDir, read)
	if err != nil {
		return nil, fmt.Errorf("NIC %s PCIe link: %w", dev.Name, err)
	}
	if !hca.present {
		return nil, nil
	}
	// An unreadable bridge cannot excuse the card: treat it as no bridge.
	bridge, berr := readLink(filepath.Dir(dev.PCIDir), read)
	if berr != nil {
		bridge = pcieLink{}
	}
	speedLow := hca.curSpeed > 0 && hca.maxSpeed > 0 && hca.curSpeed < hca.maxSpeed
	widthLow := hca.curWidth > 0 && hca.maxWidth > 0 && hca.curWidth < hca.maxWidth
	var slotNotes []string
	if speedLow && bridge.maxSpeed > 0 && bridge.maxSpeed <= hca.curSpeed {
		speedLow = false
		slotNotes = append(slotNotes, fmt.Sprintf("the slot's maximum is %s", bridge.maxSpeedText))
	}
	if widthLow && bridge.maxWidth > 0 && bridge.maxWidth <= hca.curWidth {
		widthLow = false
		slotNotes = append(slotNotes, fmt.Sprintf("the slot's maximum is x%d", bridge.maxWidth))
	}
	if !speedLow && !widthLow {
		return nil, nil
	}
	kind := KindPCIeSpeed
	if widthLow {
		kind = KindPCIeWidth
	}
	return pcieFinding(dev, hca, kind, slotNotes), nil
}

// pcieFinding describes a link below its capability.
func pcieFinding(dev *topology.Device, hca pcieLink, kind string, slotNotes []string) *Finding {
	msg := fmt.Sprintf("NIC %s (%s) PCIe link runs at %s %s, capable of %s %s", dev.Name, orUnknown(dev.PCIAddress),
		speedOrUnknown(hca.curSpeedText), lanes(hca.curWidth), speedOrUnknown(hca.maxSpeedText), lanes(hca.maxWidth))
	if len(slotNotes) > 0 {
		msg += " (" + strings.Join(slotNotes, ", ") + ")"
	}
	msg += ": reseat the card or check the slot/riser"
	md := map[string]string{
		"pciAddress":   dev.PCIAddress,
		"currentSpeed": hca.curSpeedText, "maxSpeed": hca.maxSpeedText,
		"currentWidth": strconv.Itoa(hca.curWidth), "maxWidth": strconv.Itoa(hca.maxWidth),
	}
	return &Finding{Device: dev.Name, Kind: kind, Message: msg, Metadata: md}
}

func speedOrUnknown(s string) string {
	if s == "" {
		return "unknown speed"
	}
	return s
}

func lanes(w int) string {
	if w == 0 {
		return "x?"
	}
	return "x" + strconv.Itoa(w)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown PCI address"
	}
	return s
}
