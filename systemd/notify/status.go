package notify

import "fmt"

// FormatStatus renders the one-line summary that `systemctl status` shows
// under the unit, e.g.
//
//	16 ports on 10 NICs monitored; all healthy
//	16 ports on 10 NICs monitored; 1 fatal: mlx5_3 port 1 DOWN
//	16 ports on 10 NICs monitored; 3 fatal: mlx5_3 port 1 DOWN (and 2 more)
//
// firstFatal names the first fatal finding (device, port, what) so an
// operator glancing at the unit knows where to look; it may be empty.
// Negative counts are treated as 0.
func FormatStatus(ports, nics, fatal int, firstFatal string) string {
	ports, nics, fatal = max(ports, 0), max(nics, 0), max(fatal, 0)
	head := fmt.Sprintf("%d %s on %d %s monitored", ports, plural(ports, "port", "ports"), nics, plural(nics, "NIC", "NICs"))
	if fatal == 0 {
		return head + "; all healthy"
	}
	s := fmt.Sprintf("%s; %d fatal", head, fatal)
	if first := oneLine(firstFatal); first != "" {
		s += ": " + first
		if fatal > 1 {
			s += fmt.Sprintf(" (and %d more)", fatal-1)
		}
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
