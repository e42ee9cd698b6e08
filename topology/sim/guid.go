package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SetGUID gives a device (port 0) or one of its InfiniBand ports a GUID:
// the device's node_guid and sys_image_guid, or the interface ID of the
// port's gids/0 (its port GUID; the subnet prefix stays). A fabric lab's
// node has its own GUIDs, and the daemon matches a sysfs port to its MAD
// port by the port GUID, so a test gives the simulated port the lab
// node's.
func (h *Host) SetGUID(dev string, port int, guid uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(dev)
	if err != nil {
		return err
	}
	if port == 0 {
		dir := filepath.Join(h.SysRoot(), "class", "infiniband", dev)
		for _, f := range []string{"node_guid", "sys_image_guid"} {
			if err := writeAtomic(h.Root, filepath.Join(dir, f), []byte(fmtGUID(guid)+"\n")); err != nil {
				return err
			}
		}
		d.NodeGUID = fmtGUID(guid)
		return h.saveManifest()
	}
	p, err := h.existingPortFile(dev, port, "gids/0")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	gid := strings.TrimSpace(string(b))
	if len(gid) != 39 {
		return fmt.Errorf("%s port %d: gids/0 %q is not a GID", dev, port, gid)
	}
	return writeAtomic(h.Root, p, []byte(gid[:20]+fmtGUID(guid)+"\n"))
}
