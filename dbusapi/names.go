package dbusapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Well-known names of the API. They are part of the contract with operators
// (busctl, policy files, scripts) and must not change.
const (
	BusName       = "org.nichealth.NicHealth1"
	RootPath      = dbus.ObjectPath("/org/nichealth/NicHealth1")
	PortPathBase  = RootPath + "/port"
	ManagerIface  = "org.nichealth.NicHealth1.Manager"
	PortIface     = "org.nichealth.NicHealth1.Port"
	ErrorPrefix   = "org.nichealth.NicHealth1.Error."
	DefaultGroup  = "nichealth-admin"
	DefaultRing   = 1024
	healthSignal  = ManagerIface + ".HealthEvent"
	objectManager = "org.freedesktop.DBus.ObjectManager"
	propertiesIf  = "org.freedesktop.DBus.Properties"
	introspectIf  = "org.freedesktop.DBus.Introspectable"
	peerIf        = "org.freedesktop.DBus.Peer"
)

// D-Bus error names returned by the daemon.
const (
	ErrNameNoSuchPort      = ErrorPrefix + "NoSuchPort"
	ErrNameNotLatched      = ErrorPrefix + "NotLatched"
	ErrNameAccessDenied    = ErrorPrefix + "AccessDenied"
	ErrNameInvalidArgument = ErrorPrefix + "InvalidArgument"
	ErrNameConfigRefused   = ErrorPrefix + "ConfigRefused"
)

const hexDigits = "0123456789abcdef"

// EscapePathElement turns any string into one valid object-path element.
// Every byte outside [A-Za-z0-9] becomes _xx (lower-case hex), the scheme of
// systemd's bus_label_escape, so busctl users recognise it. '_' is escaped
// too, which makes the mapping reversible; the empty string becomes "_".
func EscapePathElement(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// UnescapePathElement reverses EscapePathElement. It fails on anything
// EscapePathElement cannot produce (a stray '_', bad hex, bytes outside
// [A-Za-z0-9_]), so a forged path never names a device by accident.
func UnescapePathElement(s string) (string, error) {
	if s == "_" {
		return "", nil
	}
	if s == "" {
		return "", fmt.Errorf("empty object path element")
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlnum(c):
			b.WriteByte(c)
		case c == '_':
			if i+2 >= len(s) {
				return "", fmt.Errorf("object path element %q: truncated escape at offset %d", s, i)
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("object path element %q: bad escape %q at offset %d", s, s[i:i+3], i)
			}
			v := hi<<4 | lo
			if isAlnum(v) {
				// EscapePathElement never escapes these; accepting them would
				// give one name two paths.
				return "", fmt.Errorf("object path element %q: needless escape %q at offset %d", s, s[i:i+3], i)
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", fmt.Errorf("object path element %q: invalid byte %q at offset %d", s, c, i)
		}
	}
	return b.String(), nil
}

// PortPath is the object path of one monitored port:
// /org/nichealth/NicHealth1/port/<escaped device>_<port>. Because '_' inside
// the device name is escaped, the last '_' always separates the port number.
func PortPath(device string, port int) dbus.ObjectPath {
	return PortPathBase + "/" + dbus.ObjectPath(EscapePathElement(device)+"_"+strconv.Itoa(port))
}

// ParsePortPath reverses PortPath.
func ParsePortPath(p dbus.ObjectPath) (device string, port int, err error) {
	rest, ok := strings.CutPrefix(string(p), string(PortPathBase)+"/")
	if !ok || strings.Contains(rest, "/") {
		return "", 0, fmt.Errorf("%s is not a port object path (want %s/<device>_<port>)", p, PortPathBase)
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return "", 0, fmt.Errorf("%s: no _<port> suffix", p)
	}
	port, err = strconv.Atoi(rest[i+1:])
	if err != nil || port < 0 || strconv.Itoa(port) != rest[i+1:] {
		return "", 0, fmt.Errorf("%s: port %q is not a decimal number", p, rest[i+1:])
	}
	device, err = UnescapePathElement(rest[:i])
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", p, err)
	}
	return device, port, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
