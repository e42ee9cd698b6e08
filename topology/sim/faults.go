package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/nichealth/nichealthd/topology/sysfs"
)

var stateNames = []string{"", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
var physNames = []string{"", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"}

// normalizeState turns "DOWN", "down", "1" or "1: DOWN" into "1: DOWN".
func normalizeState(s string, names []string, what string) (string, error) {
	t := strings.TrimSpace(s)
	if num, name, ok := strings.Cut(t, ":"); ok {
		t = strings.TrimSpace(name)
		if t == "" {
			t = strings.TrimSpace(num)
		}
	}
	if id, err := strconv.Atoi(t); err == nil && id > 0 && id < len(names) {
		return fmt.Sprintf("%d: %s", id, names[id]), nil
	}
	for id, n := range names {
		if n != "" && strings.EqualFold(strings.ReplaceAll(n, " ", ""), strings.ReplaceAll(t, " ", "")) {
			return fmt.Sprintf("%d: %s", id, n), nil
		}
	}
	return "", fmt.Errorf("unknown %s %q (one of %s)", what, s, strings.Join(names[1:], ", "))
}

// cleanRel validates a file name relative to a port directory.
func cleanRel(rel string) (string, error) {
	c := filepath.Clean(rel)
	if rel == "" || filepath.IsAbs(rel) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("bad port file %q: want a path inside the port directory such as counters/link_downed", rel)
	}
	return c, nil
}

// deviceLocked finds a present device by name; h.mu must be held.
func (h *Host) deviceLocked(dev string) (*DeviceInfo, error) {
	for i := range h.m.Devices {
		if h.m.Devices[i].Name == dev {
			if h.m.Devices[i].Removed {
				return nil, fmt.Errorf("device %s is removed (RestoreDevice brings it back)", dev)
			}
			return &h.m.Devices[i], nil
		}
	}
	return nil, fmt.Errorf("unknown device %q on simulated host %s", dev, h.Root)
}

// PortPath returns the absolute path of rel in port's directory as the
// daemon sees it (through class/infiniband); rel "" gives the directory.
// It does not require the file to exist.
func (h *Host) PortPath(dev string, port int, rel string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.portPathLocked(dev, port, rel)
}

func (h *Host) portPathLocked(dev string, port int, rel string) (string, error) {
	d, err := h.deviceLocked(dev)
	if err != nil {
		return "", err
	}
	if port < 1 || port > d.Ports {
		return "", fmt.Errorf("device %s has no port %d (ports 1..%d)", dev, port, d.Ports)
	}
	dir := filepath.Join(h.SysRoot(), "class", "infiniband", dev, "ports", strconv.Itoa(port))
	if rel == "" {
		return dir, nil
	}
	c, err := cleanRel(rel)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, c), nil
}

// existingPortFile is portPathLocked plus a check that the file exists.
func (h *Host) existingPortFile(dev string, port int, rel string) (string, error) {
	p, _, err := h.portFileMode(dev, port, rel)
	return p, err
}

// portFileMode is existingPortFile with the file's type (regular, FIFO).
func (h *Host) portFileMode(dev string, port int, rel string) (string, os.FileMode, error) {
	p, err := h.portPathLocked(dev, port, rel)
	if err != nil {
		return "", 0, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return "", 0, fmt.Errorf("%s port %d: no file %s: %w", dev, port, rel, err)
	}
	return p, fi.Mode(), nil
}

// SetPortState writes ports/<n>/state and phys_state in the kernel's
// "N: NAME" form. Short names ("DOWN", "Disabled"), numbers and full forms
// are accepted; an empty argument leaves that file unchanged.
func (h *Host) SetPortState(dev string, port int, state, phys string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.portPathLocked(dev, port, "")
	if err != nil {
		return err
	}
	var st, ph string
	if state != "" {
		if st, err = normalizeState(state, stateNames, "port state"); err != nil {
			return err
		}
	}
	if phys != "" {
		if ph, err = normalizeState(phys, physNames, "physical state"); err != nil {
			return err
		}
	}
	if st != "" {
		if err := writeAtomic(h.Root, filepath.Join(dir, "state"), []byte(st+"\n")); err != nil {
			return err
		}
	}
	if ph != "" {
		if err := writeAtomic(h.Root, filepath.Join(dir, "phys_state"), []byte(ph+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// SetCounter writes v to an existing counter file, rel being relative to
// the port directory ("counters/link_downed", "hw_counters/rnr_nak_retry_err").
func (h *Host) SetCounter(dev string, port int, rel string, v uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, err := h.existingPortFile(dev, port, rel)
	if err != nil {
		return err
	}
	return writeAtomic(h.Root, p, []byte(strconv.FormatUint(v, 10)+"\n"))
}

// AddCounter adds delta to an existing counter. It fails, changing nothing,
// if the file does not hold a number (e.g. after WriteRaw "N/A (no PMA)")
// or the sum overflows 64 bits.
func (h *Host) AddCounter(dev string, port int, rel string, delta uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, err := h.existingPortFile(dev, port, rel)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	cur, err := sysfs.ParseCounter(b)
	if err != nil {
		return fmt.Errorf("%s port %d %s holds %q, not a counter: use SetCounter first", dev, port, rel, bytes.TrimSpace(b))
	}
	if cur+delta < cur {
		return fmt.Errorf("%s port %d %s: %d + %d overflows 64 bits", dev, port, rel, cur, delta)
	}
	return writeAtomic(h.Root, p, []byte(strconv.FormatUint(cur+delta, 10)+"\n"))
}

// WriteRaw writes content verbatim (no newline added) to rel in the port
// directory, creating the file if its directory exists: malformed values,
// placeholders such as "N/A (no PMA)", or a counter that appears later.
func (h *Host) WriteRaw(dev string, port int, rel, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, err := h.portPathLocked(dev, port, rel)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Dir(p)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s port %d: no directory for %s", dev, port, rel)
	}
	return writeAtomic(h.Root, p, []byte(content))
}

// RemoveFile deletes rel from the port directory: a counter this firmware
// does not expose (counter seed section 7).
func (h *Host) RemoveFile(dev string, port int, rel string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, err := h.existingPortFile(dev, port, rel)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// ResetCounters sets every counters/* and hw_counters/* file of the port
// to 0, as an administrator's counter reset does (counter seed 6.4).
// Files that do not hold a number (FIFOs included) are left alone.
func (h *Host) ResetCounters(dev string, port int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	dir, err := h.portPathLocked(dev, port, "")
	if err != nil {
		return err
	}
	for _, sub := range []string{"counters", "hw_counters"} {
		ents, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return fmt.Errorf("reset %s port %d: %w", dev, port, err)
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if err := writeAtomic(h.Root, filepath.Join(dir, sub, e.Name()), []byte("0\n")); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetRate writes ports/<n>/rate, e.g. "200 Gb/sec (4X HDR)".
func (h *Host) SetRate(dev string, port int, rate string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.TrimSpace(rate) == "" || strings.Contains(rate, "\n") {
		return fmt.Errorf("bad rate %q: want e.g. \"400 Gb/sec (4X NDR)\"", rate)
	}
	p, err := h.existingPortFile(dev, port, "rate")
	if err != nil {
		return err
	}
	return writeAtomic(h.Root, p, []byte(rate+"\n"))
}

func (h *Host) netdevFile(netdev, rel string) (string, error) {
	if netdev == "" || strings.ContainsAny(netdev, "/\n") || netdev == "." || netdev == ".." {
		return "", fmt.Errorf("bad netdev name %q", netdev)
	}
	p := filepath.Join(h.SysRoot(), "class", "net", netdev, rel)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("netdev %s: no %s on simulated host %s: %w", netdev, rel, h.Root, err)
	}
	return p, nil
}

var operstates = []string{"up", "down", "unknown", "dormant", "lowerlayerdown", "notpresent", "testing"}

// SetOperstate writes class/net/<netdev>/operstate ("up", "down", ...).
// Carrier is left as it is: change it with SetNetFile if a test needs both.
func (h *Host) SetOperstate(netdev, state string) error {
	ok := false
	for _, s := range operstates {
		ok = ok || s == state
	}
	if !ok {
		return fmt.Errorf("unknown operstate %q (one of %s)", state, strings.Join(operstates, ", "))
	}
	return h.SetNetFile(netdev, "operstate", state+"\n")
}

// SetCarrierChanges writes class/net/<netdev>/carrier_changes (DESIGN.md
// section 2 difference 1: that path, not statistics/).
func (h *Host) SetCarrierChanges(netdev string, v uint64) error {
	return h.SetNetFile(netdev, "carrier_changes", strconv.FormatUint(v, 10)+"\n")
}

// SetNetFile writes content verbatim to an existing file of the netdev
// ("carrier", "statistics/rx_crc_errors", ...).
func (h *Host) SetNetFile(netdev, rel, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := cleanRel(rel)
	if err != nil {
		return err
	}
	p, err := h.netdevFile(netdev, c)
	if err != nil {
		return err
	}
	return writeAtomic(h.Root, p, []byte(content))
}

// SetBootID writes proc/sys/kernel/random/boot_id: the daemon compares it
// with its state file to tell a reboot from a restart (counter seed 6.5).
func (h *Host) SetBootID(id string) error {
	id = strings.TrimSpace(id)
	if id == "" || strings.ContainsAny(id, "\n ") {
		return fmt.Errorf("bad boot id %q: want a UUID", id)
	}
	return writeAtomic(h.Root, filepath.Join(h.ProcRoot(), "sys/kernel/random/boot_id"), []byte(id+"\n"))
}

// NewBootID writes a fresh random boot id (a simulated reboot) and returns it.
func (h *Host) NewBootID() (string, error) {
	id, err := newUUID()
	if err != nil {
		return "", err
	}
	return id, h.SetBootID(id)
}

// BootID reads the current boot id.
func (h *Host) BootID() (string, error) {
	p := filepath.Join(h.ProcRoot(), "sys/kernel/random/boot_id")
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// SetDefaultRoute moves the default route in proc/net/route to netdev,
// which must exist in class/net; "" removes the default route.
func (h *Host) SetDefaultRoute(netdev string) error {
	return h.setRoute(&h.m.DefaultRoute, netdev)
}

// SetDefaultRoute6 does the same for the IPv6 default route in
// proc/net/ipv6_route.
func (h *Host) SetDefaultRoute6(netdev string) error {
	return h.setRoute(&h.m.DefaultRoute6, netdev)
}

func (h *Host) setRoute(field *string, netdev string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if netdev != "" {
		if _, err := h.netdevFile(netdev, ""); err != nil {
			return err
		}
	}
	old := *field
	*field = netdev
	if err := writeRoute(h.Root, h.m); err != nil {
		*field = old
		return err
	}
	return h.saveManifest()
}

// MakeFIFO replaces a port file with a named pipe, so that reading it
// blocks like a sysfs read stuck in the kernel; UnmakeFIFO undoes it.
func (h *Host) MakeFIFO(dev string, port int, rel string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, mode, err := h.portFileMode(dev, port, rel)
	if err != nil {
		return err
	}
	if !mode.IsRegular() {
		return fmt.Errorf("%s port %d %s is not a regular file", dev, port, rel)
	}
	old, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	if err := os.MkdirAll(filepath.Join(h.Root, tmpDir), 0o755); err != nil {
		return fmt.Errorf("mkfifo: %w", err)
	}
	tmp := filepath.Join(h.Root, tmpDir, "fifo-"+filepath.Base(p))
	os.Remove(tmp)
	if err := syscall.Mkfifo(tmp, 0o644); err != nil {
		return fmt.Errorf("mkfifo %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s with a FIFO: %w", p, err)
	}
	if h.m.Fifos == nil {
		h.m.Fifos = map[string]string{}
	}
	h.m.Fifos[h.relKey(dev, port, rel)] = string(old)
	return h.saveManifest()
}

func (h *Host) relKey(dev string, port int, rel string) string {
	c, _ := cleanRel(rel)
	return fmt.Sprintf("%s/%d/%s", dev, port, c)
}

// UnmakeFIFO puts back the regular file MakeFIFO replaced, with its old
// content ("0\n" if unknown).
func (h *Host) UnmakeFIFO(dev string, port int, rel string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, mode, err := h.portFileMode(dev, port, rel)
	if err != nil {
		return err
	}
	if mode&os.ModeNamedPipe == 0 {
		return fmt.Errorf("%s port %d %s is not a FIFO", dev, port, rel)
	}
	key := h.relKey(dev, port, rel)
	content, ok := h.m.Fifos[key]
	if !ok {
		content = "0\n"
	}
	if err := writeAtomic(h.Root, p, []byte(content)); err != nil {
		return err
	}
	delete(h.m.Fifos, key)
	return h.saveManifest()
}
