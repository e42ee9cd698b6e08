package readcore

import (
	"fmt"
	"path/filepath"

	"github.com/nichealth/nichealthd/mad"
)

// UmadMissing says why MADs cannot be sent from this host, "" when a
// umad device exists in dir (or dir is "": not checked).
func UmadMissing(dir string) string {
	if dir == "" {
		return ""
	}
	m, _ := filepath.Glob(filepath.Join(dir, "umad*"))
	if len(m) > 0 {
		return ""
	}
	return fmt.Sprintf("no InfiniBand MAD device (%s/umad*): load the ib_umad kernel module (modprobe ib_umad; rdma-core's rdma-load-modules@rdma.service loads it at boot)", dir)
}

// Unavailable says why no MAD can be read on this host at all, "" when
// one can: no umad device in dir, else the helper's own reason when it is
// unavailable (not installed, its libraries missing).
func Unavailable(dir string, helper mad.State) string {
	if why := UmadMissing(dir); why != "" {
		return why
	}
	if helper.Health == mad.Unavailable {
		return helper.Reason
	}
	return ""
}
