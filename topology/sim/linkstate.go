package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nichealth/nichealthd/topology/ethtool"
)

// LinkStateDir holds, per netdev, the extended link state the simulated
// driver reports (H/ethtool-linkstate/<netdev>: "REASON [SUBREASON]" in
// ethtool's machine names, e.g. "cable_issue unsupported_cable"). A netdev
// without a file reports none, as most drivers do.
const LinkStateDir = "ethtool-linkstate"

// LinkStates answers the link-down reason of a simulated host's netdevs
// in place of ethtool netlink. Only a test, or nichealthd built with the
// simulate tag, passes it to the daemon.
type LinkStates struct{ Root string }

// LinkState reads netdev's file. Like mlx5 it is asked only while the
// carrier is down: the daemon asks when a port leaves ACTIVE.
func (l LinkStates) LinkState(netdev string) (ethtool.LinkState, error) {
	if netdev == "" || strings.ContainsAny(netdev, "/\n") || netdev == "." || netdev == ".." {
		return ethtool.LinkState{}, fmt.Errorf("bad netdev name %q", netdev)
	}
	b, err := os.ReadFile(filepath.Join(l.Root, LinkStateDir, netdev))
	if errors.Is(err, fs.ErrNotExist) {
		return ethtool.LinkState{HasLink: true}, nil
	}
	if err != nil {
		return ethtool.LinkState{}, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ethtool.LinkState{HasLink: true}, nil
	}
	sub := ""
	if len(f) > 1 {
		sub = f[1]
	}
	s, v, ok := ethtool.ParseExt(f[0], sub)
	if !ok {
		return ethtool.LinkState{}, fmt.Errorf("%s: unknown extended link state %q %q", netdev, f[0], sub)
	}
	return ethtool.LinkState{HasLink: true, HasExt: true, Ext: s, ExtSubstate: v}, nil
}

// SetLinkDownReason makes netdev's driver report reason (and sub, "" for
// none) while its link is down; an empty reason removes it.
func (h *Host) SetLinkDownReason(netdev, reason, sub string) error {
	if netdev == "" || strings.ContainsAny(netdev, "/\n") || netdev == "." || netdev == ".." {
		return fmt.Errorf("bad netdev name %q", netdev)
	}
	path := filepath.Join(h.Root, LinkStateDir, netdev)
	if reason == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if _, _, ok := ethtool.ParseExt(reason, sub); !ok {
		return fmt.Errorf("unknown link-down reason %q %q (ethtool's names: no_cable, cable_issue unsupported_cable, module cmis_not_ready, ...)", reason, sub)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeAtomic(h.Root, path, []byte(strings.TrimSpace(reason+" "+sub)+"\n"))
}
