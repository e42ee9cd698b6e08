package fabricentry

import (
	"fmt"
	"strings"
)

// A switch's external ports are numbered 1..254 (IBTA vol. 1, 14.2.5.6
// NodeInfo:NumPorts; port 0 is the switch's management port, which has no
// cable, and 255 is not a port number a PMA Get can address).
const (
	FirstPort = 1
	LastPort  = 254
)

// Unicast LIDs are 1..0xBFFF (IBTA vol. 1, 4.1.3); a switch's PMA answers
// at its port 0's LID.
const (
	FirstLID = 1
	LastLID  = 0xBFFF
)

// MaxPorts bounds one host's list. A job's plan spreads the ports over
// its hosts, so one host's list is tens to hundreds of ports; 10,000 is
// a whole large fabric's worth.
const MaxPorts = 10_000

// MaxName bounds a switch name: a NodeDescription is 64 bytes, a
// node-name map's name a line.
const MaxName = 256

// Port says why p is not a switch's external port ("" when it is).
func Port(p int) string {
	if p < FirstPort || p > LastPort {
		return fmt.Sprintf("port %d outside %d..%d (a switch's external ports)", p, FirstPort, LastPort)
	}
	return ""
}

// LID says why l is not a LID a switch's PMA can answer at ("" when it
// is).
func LID(l int) string {
	switch {
	case l == 0:
		return "no switchLID, the LID its PMA answers at"
	case l < FirstLID || l > LastLID:
		return fmt.Sprintf("switchLID %d is not a unicast LID (%d..0x%X)", l, FirstLID, LastLID)
	}
	return ""
}

// Name says why s cannot be a switch name in an entry ("" when it can).
func Name(s string) string {
	if len(s) > MaxName || strings.ContainsFunc(s, badRune) {
		return fmt.Sprintf("switchName is over %d bytes or holds control characters", MaxName)
	}
	return ""
}

// CleanName makes s a name every daemon accepts: control characters
// become spaces, and it is cut at MaxName bytes on a character boundary.
func CleanName(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if badRune(r) {
			return ' '
		}
		return r
	}, s)
	for len(s) > MaxName {
		_, size := lastRune(s)
		s = s[:len(s)-size]
	}
	return s
}

func badRune(r rune) bool { return r < 0x20 || r == 0x7f }

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		if s[i]&0xC0 != 0x80 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}

// ShortHost is the name a host's entries are listed under: h up to its
// first dot, as hostname -s and a Slurm node list write it. The plan
// matches job hosts to HCAs, the daemon names itself and the reader finds
// its list by this one rule, so a fully qualified name on one side and a
// short one on the other still meet.
func ShortHost(h string) string {
	h, _, _ = strings.Cut(h, ".")
	return h
}
