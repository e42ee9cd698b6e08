package ethtool

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stringLen is ETH_GSTRING_LEN, the fixed width of one statistic name.
const stringLen = 32

// ssStats is ETH_SS_STATS, the string set of the driver statistics.
const ssStats = 1

// ErrNoStats is returned for an interface whose driver publishes no
// statistics (loopback, most virtual devices other than veth).
var ErrNoStats = errors.New("driver has no ethtool statistics")

// Source is one interface's statistics: Read takes a new sample, Value
// returns one wanted statistic of the last sample. Read must not run
// concurrently with Value or another Read.
type Source interface {
	Read() error
	// Value returns the wanted statistic at slot (the index into the want
	// list the source was opened with); ok is false when the driver does
	// not have it.
	Value(slot int) (v uint64, ok bool)
	// Has reports whether the driver has the wanted statistic at slot.
	Has(slot int) bool
	Close()
}

// ifreq is struct ifreq: the interface name, then a union whose first word
// points at the ethtool request. The union is two words and eight bytes
// (struct ifmap), so the padding follows the pointer size.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [unsafe.Sizeof(uintptr(0)) + 8]byte
}

// ssetInfo is struct ethtool_sset_info asking for one set's count.
type ssetInfo struct {
	cmd      uint32
	reserved uint32
	mask     uint64
	count    uint32
	_        uint32
}

// Stats reads one interface's statistics with SIOCETHTOOL on a socket of
// the network namespace it was opened in.
type Stats struct {
	ifname string
	fd     int
	ifr    ifreq
	sset   ssetInfo
	// buf is struct ethtool_stats: buf[0] holds cmd and n_stats, the
	// values follow. Its capacity exceeds n: the kernel writes as many
	// values as the driver has now, not as many as were asked for, so a
	// count that grew since the last check must still land inside it.
	buf  []uint64
	n    int // statistics in the layout the slots were resolved against
	want []string
	slot []int // want index -> statistic index, -1 when absent
}

// Open resolves the wanted statistic names of ifname (GSTRINGS) and keeps a
// socket for the reads. The socket belongs to the caller's network
// namespace: a test that opens inside another namespace can read from any
// thread afterwards. AF_UNIX is tried first because the daemon's unit allows
// no other family; SIOCETHTOOL is a device ioctl that any socket reaches.
func Open(ifname string, want []string) (*Stats, error) {
	if len(ifname) == 0 || len(ifname) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("ethtool %q: not a valid interface name", ifname)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("ethtool %s: socket: %w", ifname, err)
		}
	}
	s := &Stats{ifname: ifname, fd: fd, want: append([]string(nil), want...)}
	copy(s.ifr.name[:], ifname)
	if err := s.layout(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return s, nil
}

// OpenSource is Open as a Source:
//   - (src, nil): the names are resolved and src reads them;
//   - (nil, err): the interface cannot be asked (ENODEV: absent, renamed
//     or in another network namespace; ErrNoStats: a driver without
//     statistics, such as a bridge), and the Source is a plain nil
//     interface, never a nil *Stats inside a non-nil one: a caller that
//     keeps it, tests it against nil and closes it must not panic.
func OpenSource(netdev string, want []string) (Source, error) {
	s, err := Open(netdev, want)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the socket.
func (s *Stats) Close() {
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// ioctl runs one SIOCETHTOOL request. req must stay reachable from s (it
// is one of s's fields or buffers) so it outlives the call; ifr.data is an
// unsafe.Pointer, which the collector sees.
func (s *Stats) ioctl(req unsafe.Pointer) error {
	s.ifr.data = req
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&s.ifr)))
	s.ifr.data = nil
	if e != 0 {
		return e
	}
	return nil
}

// count asks the driver how many statistics it has now (GSSET_INFO).
func (s *Stats) count() (int, error) {
	s.sset = ssetInfo{cmd: unix.ETHTOOL_GSSET_INFO, mask: 1 << ssStats}
	if err := s.ioctl(unsafe.Pointer(&s.sset)); err != nil {
		return 0, fmt.Errorf("ethtool %s: ETHTOOL_GSSET_INFO: %w", s.ifname, err)
	}
	if s.sset.mask&(1<<ssStats) == 0 || s.sset.count == 0 {
		return 0, fmt.Errorf("ethtool %s: %w", s.ifname, ErrNoStats)
	}
	return int(s.sset.count), nil
}

// Names returns every statistic name of the interface (GSTRINGS), in the
// driver's order.
func (s *Stats) Names() ([]string, error) {
	n, err := s.count()
	if err != nil {
		return nil, err
	}
	// Header (cmd, string_set, len) then the names. Room for twice the
	// count: the kernel writes its own current count, see buf.
	room := 2*n + 64
	raw := make([]byte, 12+room*stringLen)
	hdr := (*[3]uint32)(unsafe.Pointer(&raw[0]))
	hdr[0], hdr[1], hdr[2] = unix.ETHTOOL_GSTRINGS, ssStats, uint32(n)
	if err := s.ioctl(unsafe.Pointer(&raw[0])); err != nil {
		return nil, fmt.Errorf("ethtool %s: ETHTOOL_GSTRINGS: %w", s.ifname, err)
	}
	got := int(hdr[2])
	if got > room {
		return nil, fmt.Errorf("ethtool %s: driver returned %d statistic names, more than the %d asked for", s.ifname, got, n)
	}
	names := make([]string, got)
	for i := range names {
		b := raw[12+i*stringLen : 12+(i+1)*stringLen]
		if j := indexNUL(b); j >= 0 {
			b = b[:j]
		}
		names[i] = string(b)
	}
	return names, nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// layout resolves the wanted names against the driver's current list and
// sizes the value buffer. It allocates; Read calls it only when the
// driver's count changed (mlx5 adds per-channel statistics when the channel
// count is raised).
func (s *Stats) layout() error {
	names, err := s.Names()
	if err != nil {
		return err
	}
	at := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := at[n]; !dup {
			at[n] = i
		}
	}
	s.slot = make([]int, len(s.want))
	for i, w := range s.want {
		s.slot[i] = -1
		if j, ok := at[w]; ok {
			s.slot[i] = j
		}
	}
	s.n = len(names)
	if need := 1 + 2*s.n + 64; cap(s.buf) < need {
		s.buf = make([]uint64, need)
	}
	return nil
}

// Read takes one sample (GSTATS). It first checks the driver's count
// (GSSET_INFO): the kernel fills as many values as the driver has now, so
// a count beyond the buffer is never asked for, and a changed count re-maps
// the names before the values are trusted.
func (s *Stats) Read() error {
	n, err := s.count()
	if err != nil {
		return err
	}
	if n != s.n || 1+n > len(s.buf) {
		if err := s.layout(); err != nil {
			return err
		}
	}
	hdr := (*[2]uint32)(unsafe.Pointer(&s.buf[0]))
	hdr[0], hdr[1] = unix.ETHTOOL_GSTATS, uint32(s.n)
	if err := s.ioctl(unsafe.Pointer(&s.buf[0])); err != nil {
		return fmt.Errorf("ethtool %s: ETHTOOL_GSTATS: %w", s.ifname, err)
	}
	if got := int(hdr[1]); got != s.n {
		// The set changed between the two calls; the next read re-maps.
		want := s.n
		s.n = -1
		return fmt.Errorf("ethtool %s: statistics changed during the read (%d, expected %d)", s.ifname, got, want)
	}
	return nil
}

// Has reports whether the driver has the wanted statistic at slot.
func (s *Stats) Has(slot int) bool { return slot >= 0 && slot < len(s.slot) && s.slot[slot] >= 0 }

// Value returns the wanted statistic at slot from the last Read.
func (s *Stats) Value(slot int) (uint64, bool) {
	if slot < 0 || slot >= len(s.slot) || s.slot[slot] < 0 || s.slot[slot] >= s.n {
		return 0, false
	}
	return s.buf[1+s.slot[slot]], true
}
