package farend

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nichealth/nichealthd/internal/nodenamemap"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/mad/wire"
)

// names is the node-name map, read again when the file changes.
type names struct {
	path  string
	sum   [sha256.Size]byte
	m     map[uint64]string
	saidE string
	// files reads the map within a deadline (mapReadDeadline when
	// deadline is 0), joining a read still pending: a map on a hung
	// filesystem, or one that became a FIFO, must not hold the far end's
	// reads for good.
	files    *regularfile.Joined
	deadline time.Duration
}

// maxMapBytes bounds the map: a fabric of 10,000 nodes is about 500 KiB.
const maxMapBytes = 8 << 20

// mapReadDeadline bounds one read of the map; a read that has not
// returned by then is joined by the next round's, never repeated.
const mapReadDeadline = 5 * time.Second

func (n *names) refresh(cfg PeerConfig, log *slog.Logger, once func(key, msg string, args ...any)) {
	if n.files == nil {
		n.files = &regularfile.Joined{}
	}
	if cfg.NodeNameMap != n.path {
		*n = names{path: cfg.NodeNameMap, files: n.files, deadline: n.deadline}
	}
	if n.path == "" {
		return
	}
	deadline := n.deadline
	if deadline == 0 {
		deadline = mapReadDeadline
	}
	// Read whole each round (a map is a few hundred KiB), parsed only
	// when its bytes changed: no stat, which a hung filesystem would
	// hold as it holds a read.
	b, err := n.files.Read(n.path, maxMapBytes, deadline)
	switch {
	case err != nil && cfg.Optional && errors.Is(err, os.ErrNotExist):
		n.m = nil
		return
	case err != nil:
		n.m = nil
		n.sum = [sha256.Size]byte{}
		n.say(log, fmt.Sprintf("read %s: %v; peers are named by their NodeDescription", n.path, err))
		return
	}
	sum := sha256.Sum256(b)
	if sum == n.sum && n.m != nil {
		return
	}
	m, probs := nodenamemap.Parse(b)
	n.m, n.sum = m, sum
	if len(probs) > 0 {
		log.Warn("node-name map lines skipped", "file", n.path, "lines", len(probs), "first", fmt.Sprintf("line %d: %s", probs[0].Line, probs[0].Reason))
	}
	n.saidE = ""
}

func (n *names) say(log *slog.Logger, msg string) {
	if msg != n.saidE {
		n.saidE = msg
		log.Warn("node-name map not used", "file", n.path, "error", msg)
	}
}

// name is what the map calls a peer (by node GUID, then port GUID), or
// its NodeDescription.
func (n *names) name(p wire.Peer) string {
	for _, g := range []string{p.NodeGUID, p.PortGUID} {
		if v, err := wire.ParseGUID(g); err == nil {
			if s, ok := n.m[v]; ok {
				return s
			}
		}
	}
	if p.Description != "" {
		return p.Description
	}
	return p.NodeGUID
}
