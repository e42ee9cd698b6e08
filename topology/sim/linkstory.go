package sim

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/devlink"
	"github.com/nichealth/nichealthd/topology/module"
)

// ModuleDir holds, per netdev, the flat dump of the simulated transceiver
// in its cage (H/modules/<netdev>, what `ethtool -m NETDEV raw on` writes);
// a netdev without one has an empty cage. DevlinkDir holds, per PCI
// function, its devlink health reporters and versions
// (H/devlink/<pci>.json).
const (
	ModuleDir  = "modules"
	DevlinkDir = "devlink"
)

func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/\n") && s != "." && s != ".."
}

// Modules reads the simulated transceivers in place of ethtool netlink.
// Only a test, or nichealthd built with the simulate tag, passes it.
type Modules struct{ Root string }

// Module reads netdev's dump: an empty cage answers module.ErrNoModule
// wrapping EOPNOTSUPP, as topology/ethtool reports a cage without a
// module.
func (m Modules) Module(netdev string) (module.Memory, error) {
	if !validName(netdev) {
		return module.Memory{}, fmt.Errorf("bad netdev name %q", netdev)
	}
	b, err := os.ReadFile(filepath.Join(m.Root, ModuleDir, netdev))
	if errors.Is(err, fs.ErrNotExist) {
		return module.Memory{}, fmt.Errorf("%s: %w: %w", netdev, module.ErrNoModule, unix.EOPNOTSUPP)
	}
	if err != nil {
		return module.Memory{}, err
	}
	return module.ParseDump(b)
}

// healthyOSFP is a 400G OSFP optic (CMIS 5.0, four media lanes) in good
// health: 45 °C, 3.3 V, every lane at 100 mA bias, 1.5 mW (1.8 dBm) sent and
// 1.2 mW (0.8 dBm) received, with thresholds of a typical DR4 module.
func healthyOSFP(serial string) module.Memory {
	lo := make([]byte, module.PageSize)
	lo[0], lo[1], lo[3] = 0x19, 0x50, 3<<1 // OSFP, CMIS 5.0, ModuleReady
	put := func(b []byte, at int, vs ...uint16) {
		for i, v := range vs {
			binary.BigEndian.PutUint16(b[at+2*i:], v)
		}
	}
	put(lo, 14, 45<<8, 33000)
	up0 := make([]byte, module.PageSize)
	copy(up0[1:], fmt.Sprintf("%-16s", "NVIDIA"))
	copy(up0[20:], fmt.Sprintf("%-16s", "MMS4X00-NS400"))
	copy(up0[36:], "A1")
	copy(up0[38:], fmt.Sprintf("%-16s", serial))
	up0[210-128] = 0xf0 // media lanes 5-8 unsupported: DR4
	p1 := make([]byte, module.PageSize)
	p1[159-128], p1[160-128] = 0x03, 0x07
	p2 := make([]byte, module.PageSize)
	put(p2, 0, 80<<8, 0xfb00, 75<<8, 0)    // temperature 80, -5, 75, 0 °C
	put(p2, 8, 36300, 29700, 34650, 31350) // 3.63, 2.97, 3.465, 3.135 V
	put(p2, 48, 50000, 1500, 40000, 2000)  // Tx power 5, 0.15, 4, 0.2 mW
	put(p2, 56, 65000, 5000, 62500, 7500)  // bias 130, 10, 125, 15 mA
	put(p2, 64, 50000, 700, 40000, 1000)   // Rx power 5, 0.07, 4, 0.1 mW
	p10 := make([]byte, module.PageSize)
	p11 := make([]byte, module.PageSize)
	copy(p11, []byte{0x44, 0x44, 0x44, 0x44}) // every host lane DPActivated
	for i := range 4 {
		put(p11, 154-128+2*i, 15000)
		put(p11, 170-128+2*i, 50000)
		put(p11, 186-128+2*i, 12000)
	}
	return module.Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 1: p1, 2: p2, 0x10: p10, 0x11: p11}}
}

// passiveDAC is a 100G passive copper QSFP28 cable's plug (SFF-8636):
// paged memory with a page 03h of thresholds copied from an optic's, as
// such cables are built, but byte 147 says copper (Ah: passive,
// unequalized) and byte 220 says it monitors nothing. Bytes 22-23 hold
// 01 80, which a decoder reading them regardless shows as 1.5 °C, and
// the lane monitors are zero, which judged would be four dark lanes.
func passiveDAC(serial string) module.Memory {
	lo := make([]byte, module.PageSize)
	lo[0], lo[1], lo[22], lo[23] = 0x11, 0x07, 0x01, 0x80
	up0 := make([]byte, module.PageSize)
	up0[0], up0[130-128] = 0x11, 0x23 // identifier, no separable connector
	up0[147-128] = 0xa0
	copy(up0[148-128:], fmt.Sprintf("%-16s", "NVIDIA"))
	copy(up0[168-128:], fmt.Sprintf("%-16s", "MCP1600-C001E30N"))
	copy(up0[184-128:], "A3")
	copy(up0[196-128:], fmt.Sprintf("%-16s", serial))
	p3 := make([]byte, module.PageSize)
	copy(p3, []byte{0x50, 0, 0xf6, 0, 0x46, 0, 0, 0})
	copy(p3[48:], []byte{0x87, 0x71, 0x01, 0xd3, 0x43, 0xe2, 0x03, 0xa5})
	copy(p3[56:], []byte{0x10, 0x9a, 0x0a, 0xba, 0x0f, 0xa0, 0x0b, 0xb8})
	return module.Memory{Lower: lo, Upper: map[byte][]byte{0: up0, 3: p3}}
}

// healthySFP28 is a 25G SR SFP28 optic (SFF-8472, internally calibrated):
// 38 °C, 3.3 V, 6.5 mA bias, 0.6 mW (-2.2 dBm) sent, 0.5 mW (-3 dBm)
// received, thresholds of a typical SR part.
func healthySFP28(serial string) module.Memory {
	lo := make([]byte, module.PageSize)
	lo[0], lo[1], lo[2] = 0x03, 0x04, 0x07 // SFP, 2-wire ID, LC
	copy(lo[20:], fmt.Sprintf("%-16s", "NVIDIA"))
	copy(lo[40:], fmt.Sprintf("%-16s", "MMA2P00-AS"))
	copy(lo[56:], "A1  ")
	copy(lo[68:], fmt.Sprintf("%-16s", serial))
	copy(lo[84:], "240601  ")
	lo[92] = 0x68 // diagnostics, internally calibrated, average Rx power
	a2 := make([]byte, module.PageSize)
	put := func(at int, vs ...uint16) {
		for i, v := range vs {
			binary.BigEndian.PutUint16(a2[at+2*i:], v)
		}
	}
	put(0, 80<<8, 0xf600, 75<<8, 0xfb00)    // 80, -10, 75, -5 °C
	put(8, 36300, 29700, 34650, 31350)      // 3.63, 2.97, 3.465, 3.135 V
	put(16, 6000, 1000, 5500, 1500)         // 12, 2, 11, 3 mA
	put(24, 15849, 1585, 12589, 1995)       // +2, -8, +1, -7 dBm
	put(32, 15849, 398, 12589, 501)         // +2, -14, +1, -13 dBm
	put(96, 38<<8, 33000, 3250, 6000, 5000) // readings
	return module.Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, module.PageSize)}, A2: a2}
}

// ModuleKinds are what InstallModuleKind plugs in.
var ModuleKinds = []string{"osfp", "dac", "sfp28"}

// InstallModule plugs a healthy 400G OSFP optic into netdev's cage.
func (h *Host) InstallModule(netdev string) error { return h.InstallModuleKind(netdev, "osfp") }

// InstallModuleKind plugs a module of kind into netdev's cage: "osfp" (a
// healthy 400G OSFP optic, CMIS), "dac" (a passive copper QSFP28 cable
// without diagnostics, SFF-8636) or "sfp28" (a healthy 25G SFP28 optic,
// SFF-8472, as in ConnectX-6 Lx ports).
func (h *Host) InstallModuleKind(netdev, kind string) error {
	if !validName(netdev) {
		return fmt.Errorf("bad netdev name %q", netdev)
	}
	serial := "SIM" + strings.ToUpper(netdev)
	switch kind {
	case "osfp":
		return h.writeModule(netdev, healthyOSFP(serial))
	case "dac":
		return h.writeModule(netdev, passiveDAC(serial))
	case "sfp28":
		return h.writeModule(netdev, healthySFP28(serial))
	}
	return fmt.Errorf("unknown module kind %q (%s)", kind, strings.Join(ModuleKinds, ", "))
}

// RemoveModule empties netdev's cage.
func (h *Host) RemoveModule(netdev string) error {
	if !validName(netdev) {
		return fmt.Errorf("bad netdev name %q", netdev)
	}
	if err := os.Remove(filepath.Join(h.Root, ModuleDir, netdev)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (h *Host) writeModule(netdev string, m module.Memory) error {
	path := filepath.Join(h.Root, ModuleDir, netdev)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeAtomic(h.Root, path, m.Flat())
}

// ModuleSerial is the serial number of netdev's simulated module.
func (h *Host) ModuleSerial(netdev string) (string, error) {
	m, err := Modules{Root: h.Root}.Module(netdev)
	if err != nil {
		return "", err
	}
	return module.Decode(m).Serial, nil
}

// SetModule changes one reading of netdev's module, installing a healthy
// one first if the cage is empty: what is "temperature" (°C), "rx" (a
// lane's received power, dBm), "bias" (a lane's Tx laser bias, mA, up to
// 131 mA), "los" (a lane's latched Rx loss of signal, 1 or 0).
func (h *Host) SetModule(netdev, what string, lane int, value float64) error {
	m, err := Modules{Root: h.Root}.Module(netdev)
	if errors.Is(err, unix.EOPNOTSUPP) {
		m, err = healthyOSFP("SIM"+strings.ToUpper(netdev)), nil
	}
	if err != nil {
		return err
	}
	if module.SpecOf(m.Lower[0]) != module.SpecCMIS {
		return fmt.Errorf("%s: only the OSFP optic's readings can be set (the cage holds a %s)", netdev, module.Decode(m).Type)
	}
	p11 := m.Upper[0x11]
	if len(p11) != module.PageSize {
		return fmt.Errorf("%s: module without page 11h", netdev)
	}
	if what != "temperature" && (lane < 1 || lane > 8) {
		return fmt.Errorf("lane %d: lanes are 1 to 8", lane)
	}
	switch what {
	case "temperature":
		binary.BigEndian.PutUint16(m.Lower[14:], uint16(int16(math.Round(value*256))))
	case "rx":
		mw := math.Pow(10, value/10)
		raw := math.Round(mw * 10000)
		if raw > math.MaxUint16 {
			raw = math.MaxUint16
		}
		binary.BigEndian.PutUint16(p11[186-128+2*(lane-1):], uint16(raw))
	case "bias":
		// CMIS page 11h bytes 170-185: 2 µA units (the healthy module's
		// multiplier is 1).
		raw := math.Round(value * 500)
		if raw > math.MaxUint16 || raw < 0 {
			return fmt.Errorf("bias %v mA: the register holds 0 to 131 mA", value)
		}
		binary.BigEndian.PutUint16(p11[170-128+2*(lane-1):], uint16(raw))
	case "los":
		bit := byte(1) << (lane - 1)
		if value != 0 {
			p11[147-128] |= bit
		} else {
			p11[147-128] &^= bit
		}
	default:
		return fmt.Errorf("unknown module reading %q (temperature, rx, bias, los)", what)
	}
	return h.writeModule(netdev, m)
}

// devlinkState is one function's simulated devlink instance.
type devlinkState struct {
	Reporters []devlink.Reporter `json:"reporters"`
	Info      devlink.Info       `json:"info"`
}

// Devlink reads the simulated devlink instances in place of the devlink
// family. Only a test, or nichealthd built with the simulate tag, passes
// it.
type Devlink struct{ Root string }

func (d Devlink) states() ([]devlinkState, error) {
	entries, err := os.ReadDir(filepath.Join(d.Root, DevlinkDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []devlinkState
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d.Root, DevlinkDir, e.Name()))
		if err != nil {
			return nil, err
		}
		var s devlinkState
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Reporters lists every simulated reporter.
func (d Devlink) Reporters() ([]devlink.Reporter, error) {
	st, err := d.states()
	var out []devlink.Reporter
	for _, s := range st {
		out = append(out, s.Reporters...)
	}
	return out, err
}

// Infos lists every simulated instance's versions.
func (d Devlink) Infos() ([]devlink.Info, error) {
	st, err := d.states()
	var out []devlink.Info
	for _, s := range st {
		out = append(out, s.Info)
	}
	return out, err
}

func (h *Host) devlinkPath(pci string) string {
	return filepath.Join(h.Root, DevlinkDir, pci+".json")
}

// devlinkOf reads (or makes, as mlx5 registers it) a function's instance.
func (h *Host) devlinkOf(dev string) (string, devlinkState, error) {
	d, ok := h.Device(dev)
	if !ok {
		return "", devlinkState{}, fmt.Errorf("no device %s", dev)
	}
	var s devlinkState
	b, err := os.ReadFile(h.devlinkPath(d.PCIAddress))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s); err != nil {
			return "", s, err
		}
	case errors.Is(err, fs.ErrNotExist):
		dv := devlink.Device{Bus: "pci", Name: d.PCIAddress}
		for _, name := range []string{"fw", "fw_fatal", "vnic"} {
			s.Reporters = append(s.Reporters, devlink.Reporter{Device: dv, Name: name, AutoRecover: true})
		}
		s.Info = devlink.Info{Device: dv, Driver: "mlx5_core", Fixed: map[string]string{"fw.psid": d.BoardID},
			Running: map[string]string{"fw.version": d.FWVer}, Stored: map[string]string{"fw.version": d.FWVer}}
	default:
		return "", s, err
	}
	return d.PCIAddress, s, nil
}

func (h *Host) writeDevlink(pci string, s devlinkState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(h.Root, DevlinkDir), 0o755); err != nil {
		return err
	}
	return writeAtomic(h.Root, h.devlinkPath(pci), b)
}

// DevlinkReport makes dev's reporter report an error (recovered false:
// it stays in error state, as fw_fatal does until the function is reset),
// or recover from one.
func (h *Host) DevlinkReport(dev, reporter string, recovered bool) error {
	pci, s, err := h.devlinkOf(dev)
	if err != nil {
		return err
	}
	for i := range s.Reporters {
		r := &s.Reporters[i]
		if r.Name != reporter {
			continue
		}
		if recovered {
			r.Error = false
			r.RecoverCount++
		} else {
			r.Error = true
			r.ErrorCount++
		}
		return h.writeDevlink(pci, s)
	}
	return fmt.Errorf("%s has no reporter %q (fw, fw_fatal, vnic)", dev, reporter)
}

// DevlinkFirmware sets dev's running and stored fw.version.
func (h *Host) DevlinkFirmware(dev, running, stored string) error {
	pci, s, err := h.devlinkOf(dev)
	if err != nil {
		return err
	}
	s.Info.Running["fw.version"], s.Info.Stored["fw.version"] = running, stored
	return h.writeDevlink(pci, s)
}
