package latch

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// MaxPort is the highest port number a key holds: InfiniBand port numbers
// are one byte, and a RoCE device has port 1.
const MaxPort = 255

// Port is a port as a check's memory keys it: an RDMA device and its port
// number (1 to MaxPort).
//
// Its text form is "<device>/<port>" ("mlx5_0/1"): a device name never
// holds a '/' (sysfs names cannot), so the form splits without doubt, and
// it is what the far-end and RoCE sections of the state file have always
// been keyed by. As a map key a Port persists in that form
// (encoding.TextMarshaler). The port-state and transceiver sections were
// written in seed 6.6's "<device>_<port>" form, which they keep
// (Underscored, ParseUnderscored): a state file on disk loads unchanged
// whichever section it is.
type Port struct {
	Device string
	Port   int
	// raw is the text of a key read back that is not a port: it keeps
	// its place (and its text, for the note that drops it) until the
	// section's validation drops it, instead of failing the whole
	// section's decoding.
	raw string
	bad bool
}

// PortOf is the key of device's port.
func PortOf(device string, port int) Port { return Port{Device: device, Port: port} }

// Valid reports whether p is a port a check could have written: a device
// name the kernel can give and a port from 1 to MaxPort.
func (p Port) Valid() bool {
	return !p.bad && topology.ValidDeviceName(p.Device) && p.Port >= 1 && p.Port <= MaxPort
}

// String is the key's text form, "<device>/<port>"; a key read back that
// was not a port is its text as read.
func (p Port) String() string {
	if p.bad {
		return p.raw
	}
	return p.Device + "/" + strconv.Itoa(p.Port)
}

// Underscored is the key in seed 6.6's "<device>_<port>" form.
func (p Port) Underscored() string {
	if p.bad {
		return p.raw
	}
	return p.Device + "_" + strconv.Itoa(p.Port)
}

// Compare orders keys as their text forms sort, which is the order the
// state file lists them in.
func (p Port) Compare(q Port) int { return cmp.Compare(p.String(), q.String()) }

// Renamed is p on device nw when it is on device old.
func (p Port) Renamed(old, nw string) (Port, bool) {
	if p.bad || p.Device != old {
		return p, false
	}
	return PortOf(nw, p.Port), true
}

// ParsePort reads "<device>/<port>"; ok is false for any other text.
// The number is written as a check writes it: digits, no sign, no
// leading zero.
func ParsePort(s string) (p Port, ok bool) {
	p, why := parse(s, '/')
	return p, why == ""
}

// ParseUnderscored reads seed 6.6's "<device>_<port>" form (a device
// name may hold '_' itself: the port is after the last one); why says
// what is wrong with any other text ("" when none).
func ParseUnderscored(s string) (p Port, why string) { return parse(s, '_') }

func parse(s string, sep byte) (Port, string) {
	i := strings.LastIndexByte(s, sep)
	if i <= 0 {
		return Port{}, "key is not <device>" + string(sep) + "<port>"
	}
	dev, num := s[:i], s[i+1:]
	n, why := topology.ParsePortNumber(num)
	switch {
	case why != "":
		return Port{}, why
	case n < 1 || n > MaxPort:
		return Port{}, "port " + num + " is not 1 to " + strconv.Itoa(MaxPort)
	case strconv.Itoa(n) != num:
		return Port{}, "bad port number"
	case !topology.ValidDeviceName(dev):
		return Port{}, "bad device name"
	}
	return PortOf(dev, n), ""
}

// MarshalText is the key's text form: a map keyed by Port persists as
// the JSON object keyed "<device>/<port>" it always was.
func (p Port) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads the text form. It never fails: a key that is not a
// port keeps its text and is not Valid, so the section's validation drops
// that entry alone, naming it, where an error would cost the section.
func (p *Port) UnmarshalText(b []byte) error {
	s := string(b)
	if q, ok := ParsePort(s); ok {
		*p = q
		return nil
	}
	*p = Port{raw: s, bad: true}
	return nil
}
