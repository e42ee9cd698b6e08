package persist

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// DefaultBootIDPath is where the kernel publishes the current boot's ID.
const DefaultBootIDPath = "/proc/sys/kernel/random/boot_id"

// BootStatus says how the loaded state relates to the running boot.
type BootStatus int

const (
	// BootFresh: there was no usable state (no file, a corrupt file, or a
	// file without a boot ID). Seed link-state 3.4 gives the first poll
	// with no persisted state the same behaviour as the first poll after
	// a reboot, so Baseline reports true.
	BootFresh BootStatus = iota
	// BootRebooted: the state belonged to an earlier boot and was cleared
	// (seed 6.5 step 3).
	BootRebooted
	// BootSame: the state belongs to this boot (daemon restart) and was
	// kept (seed 6.5 step 4).
	BootSame
)

func (b BootStatus) String() string {
	switch b {
	case BootFresh:
		return "fresh"
	case BootRebooted:
		return "rebooted"
	case BootSame:
		return "same-boot"
	}
	return fmt.Sprintf("BootStatus(%d)", int(b))
}

// Baseline reports whether the first poll must follow the after-reboot
// rules of seed 6.5 / link-state 3.4: healthy baselines for every healthy
// port and every counter, rather than comparing with persisted state.
func (b BootStatus) Baseline() bool { return b != BootSame }

// ApplyBoot ties st to the running boot. Outcomes:
//   - BootSame: st.BootID equals bootID; nothing changes;
//   - BootRebooted: st.BootID was another boot's; every observation is
//     cleared (seed 6.5: the host may have come back with other hardware,
//     and all kernel counters restarted from zero) and bootID stored;
//   - BootFresh: st had no boot ID; it is cleared the same way (a file
//     without a boot ID cannot prove its observations are from this boot).
//
// The caller saves the state after the first poll as usual. A nil st is
// reported as BootFresh and left alone.
func ApplyBoot(st *State, bootID string) BootStatus {
	if st == nil {
		return BootFresh
	}
	bootID = strings.ToLower(strings.TrimSpace(bootID))
	switch {
	case st.BootID == "":
		st.ClearObservations()
		st.BootID = bootID
		return BootFresh
	case st.BootID != bootID:
		st.ClearObservations()
		st.BootID = bootID
		return BootRebooted
	}
	return BootSame
}

// ClearObservations forgets everything seen on the hardware (seed 6.5's
// "clear ALL persisted state") and keeps only the version and boot ID.
func (s *State) ClearObservations() {
	s.CounterSnapshots = map[string]CounterSnapshot{}
	s.BreachFlags = map[string]BreachFlag{}
	s.PortStates = map[string]PortState{}
	s.KnownDevices = []string{}
	s.CardAnomalies = map[string]CardAnomaly{}
	s.Health = nil
	s.Saturated = map[string]time.Time{}
	s.Disappeared = nil
	s.Sanity = nil
	s.DeviceAddrs = nil
}

// ReadBootID reads the kernel's boot ID from path (normally
// DefaultBootIDPath). It returns the ID in lower case, or an error naming
// the file when it cannot be read or does not hold a UUID.
func ReadBootID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read boot ID %s: %w (point --boot-id-path at the kernel's %s)", path, err, DefaultBootIDPath)
	}
	defer f.Close()
	// A boot_id file is 37 bytes; reading a little more is enough to tell
	// a wrong file from a right one without reading a large file whole.
	b, err := io.ReadAll(io.LimitReader(f, 128))
	if err != nil {
		return "", fmt.Errorf("read boot ID %s: %w", path, err)
	}
	id := strings.ToLower(strings.TrimSpace(string(b)))
	if !validBootID(id) {
		return "", fmt.Errorf("boot ID file %s holds %q, not a UUID (point --boot-id-path at the kernel's %s)",
			path, truncate(id, 40), DefaultBootIDPath)
	}
	return id, nil
}

// validBootID accepts the kernel's format: 8-4-4-4-12 lower-case hex digits.
func validBootID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
