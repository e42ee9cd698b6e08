package sim

import (
	"fmt"
	"path/filepath"
)

// serialFor is the board serial number of the card made seq-th, in the
// form ConnectX boards print (MT, year and week, X, a sequence number).
func serialFor(seq int) string { return fmt.Sprintf("MT2245X%05d", seq) }

// vpdFor is the VPD a function of model m carries (PCI VPD resource
// list: identifier string, VPD-R keywords, end tag), with NVIDIA's
// SMDL=SW_MNG marker in its vendor string when limited is set: the limited
// PFs of an HGX B200/B300 NVLink bridge.
func vpdFor(m hcaModel, serial string, limited bool) []byte {
	va := "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=" + m.hcaType
	if limited {
		va += ":SMDL=SW_MNG"
	}
	var r []byte
	for _, kv := range [][2]string{{"PN", "MCX-" + m.hcaType}, {"EC", "A7"}, {"SN", serial}, {"V2", "MCX-" + m.hcaType}, {"VA", va}} {
		r = append(r, kv[0][0], kv[0][1], byte(len(kv[1])))
		r = append(r, kv[1]...)
	}
	r = append(r, 'R', 'V', 1, 0)
	name := "NVIDIA " + m.name
	out := append([]byte{0x82, byte(len(name)), 0}, name...)
	out = append(out, 0x90, byte(len(r)), byte(len(r)>>8))
	out = append(out, r...)
	return append(out, 0x78)
}

// SetLimitedPF rewrites dev's VPD with (or without) NVIDIA's SW_MNG marker:
// the function becomes one of the limited PFs Fabric Manager owns, whose
// counters the firmware refuses. Discovery reads the VPD, so set it before
// the daemon starts (or a rediscovery).
func (h *Host) SetLimitedPF(dev string, limited bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(dev)
	if err != nil {
		return err
	}
	if d.IsVF {
		return fmt.Errorf("vpd %s: a VF has no VPD of its own", dev)
	}
	m := modelOf(d.HCAType)
	if err := writeAtomic(h.Root, filepath.Join(h.SysRoot(), d.PCIPath, "vpd"), vpdFor(m, d.Serial, limited)); err != nil {
		return err
	}
	d.LimitedPF = limited
	return h.saveManifest()
}

// SetFirmware writes dev's fw_ver and, when boardID is not "", its
// board_id (PSID): a card replaced in service and never flashed, or
// another model of card, in a role group of identical ones.
func (h *Host) SetFirmware(dev, fwVer, boardID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.deviceLocked(dev)
	if err != nil {
		return err
	}
	ib := filepath.Join(h.SysRoot(), d.PCIPath, "infiniband", d.Name)
	if fwVer != "" {
		if err := writeAtomic(h.Root, filepath.Join(ib, "fw_ver"), []byte(fwVer+"\n")); err != nil {
			return err
		}
		d.FWVer = fwVer
	}
	if boardID != "" {
		if err := writeAtomic(h.Root, filepath.Join(ib, "board_id"), []byte(boardID+"\n")); err != nil {
			return err
		}
		d.BoardID = boardID
	}
	return h.saveManifest()
}

func modelOf(hcaType string) hcaModel {
	for _, m := range []hcaModel{cx6, cx7, e810, bf3} {
		if m.hcaType == hcaType {
			return m
		}
	}
	return cx7
}
