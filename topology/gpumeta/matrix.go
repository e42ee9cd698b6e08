package gpumeta

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/internal/jsonerr"
	"github.com/nichealth/nichealthd/internal/regularfile"
)

// Topology levels as nvidia-smi topo -m prints them (NVML's
// nvmlGpuTopologyLevel_t, seed 4.2.2), nearest first.
const (
	LevelSelf = "X"    // the device itself
	LevelPIX  = "PIX"  // at most one PCIe bridge (one switch) between them
	LevelPXB  = "PXB"  // several bridges, host bridge not traversed
	LevelPHB  = "PHB"  // through the PCIe host bridge (the CPU root complex)
	LevelNODE = "NODE" // between host bridges of one NUMA node
	LevelSYS  = "SYS"  // across the SMP interconnect between NUMA nodes
)

// Source names recorded in Matrix.Source.
const (
	SourceMetadata  = "metadata"
	SourceSysfs     = "sysfs"
	SourceNvidiaSMI = "nvidia-smi"
)

// DefaultMetadataPath is where NVSentinel's metadata collector publishes
// the matrix (seed 12.2).
const DefaultMetadataPath = "/var/lib/nvsentinel/gpu_metadata.json"

// MaxMetadataBytes bounds the metadata file: a node's GPUs and NICs are a
// few KiB of JSON.
const MaxMetadataBytes = 4 << 20

// GPU is one GPU of the matrix. NUMANode is -1 when unknown.
type GPU struct {
	ID         int    `json:"gpu_id"`
	PCIAddress string `json:"pci_address,omitempty"`
	NUMANode   int    `json:"numa_node"`
	// UUID is the GPU's UUID (GPU-…) where the metadata has it; a matrix
	// built from sysfs has none.
	UUID string `json:"uuid,omitempty"`
	// Name is the product name ("NVIDIA H100 80GB HBM3"): the metadata's
	// device_name, or for a matrix built from sysfs the name of its PCI
	// device ID (ModelOf); "" when unknown.
	Name string `json:"device_name,omitempty"`
}

// Matrix is the GPU list and, per NIC name, one topology level per GPU in
// GPUs order (the nic_topology field of gpu_metadata.json). It marshals to
// exactly that JSON shape.
type Matrix struct {
	GPUs []GPU               `json:"gpus"`
	NICs map[string][]string `json:"nic_topology"`
	// Source says where the matrix came from (a Source* constant or a
	// file path); it is not part of the file format.
	Source string `json:"-"`
}

// ValidLevel reports whether s is a level gpu_metadata.json may carry:
// X, PIX, PXB, PHB, NODE, SYS or NV<n> (a bonded set of n NVLinks).
func ValidLevel(s string) bool {
	switch s {
	case LevelSelf, LevelPIX, LevelPXB, LevelPHB, LevelNODE, LevelSYS:
		return true
	}
	if n, ok := strings.CutPrefix(s, "NV"); ok && n != "" {
		v, err := strconv.Atoi(n)
		return err == nil && v > 0 && n[0] != '+' && n[0] != '-'
	}
	return false
}

// metadataFile is the part of the collector's file this package reads.
// encoding/json ignores every other field (version, timestamp, node_name,
// driver_version, serial_number, nvlinks, ...).
type metadataFile struct {
	GPUs []struct {
		ID         *int   `json:"gpu_id"`
		PCIAddress string `json:"pci_address"`
		NUMANode   *int   `json:"numa_node"`
		UUID       string `json:"uuid"`
		DeviceName string `json:"device_name"`
	} `json:"gpus"`
	NICTopology map[string][]string `json:"nic_topology"`
}

// Load reads NVSentinel's gpu_metadata.json.
//
//   - missing file: an error wrapping fs.ErrNotExist;
//   - unparsable JSON, no GPUs, a GPU without gpu_id, a duplicate gpu_id, a
//     nic_topology row whose length differs from the GPU count, or a level
//     that is not X/PIX/PXB/PHB/NODE/SYS/NV<n>: an error naming the file and
//     the GPU or NIC at fault;
//   - a GPU without numa_node, or with a negative one, gets NUMANode -1;
//   - an absent or empty nic_topology is accepted (a node without RDMA
//     NICs); every NIC the caller knows is then missing from the matrix,
//     which role classification treats as SYS to every GPU and says so.
//
// The file is read through the bounded reader: a regular file of at most
// MaxMetadataBytes, never a FIFO.
func Load(path string) (*Matrix, error) {
	b, err := regularfile.Read(path, MaxMetadataBytes)
	return loaded(path, b, err)
}

// LoadWithin is Load for a daemon: the read waits at most deadline, and a
// read still hung from an earlier call is joined rather than repeated
// (files: regularfile.Joined), so a metadata file on a hung filesystem
// costs one blocked thread and a clear error at each classification, never
// a stalled poll loop.
func LoadWithin(files *regularfile.Joined, path string, deadline time.Duration) (*Matrix, error) {
	b, err := files.Read(path, MaxMetadataBytes, deadline)
	return loaded(path, b, err)
}

func loaded(path string, b []byte, err error) (*Matrix, error) {
	if err != nil {
		return nil, fmt.Errorf("read GPU metadata %s: %w", path, err)
	}
	m, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("GPU metadata %s: %w", path, err)
	}
	m.Source = SourceMetadata + " " + path
	return m, nil
}

// Decode parses gpu_metadata.json content with the rules of Load.
func Decode(b []byte) (*Matrix, error) { return decode(b) }

func decode(b []byte) (*Matrix, error) {
	var f metadataFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not valid JSON: %s", jsonerr.Describe(b, err))
	}
	if len(f.GPUs) == 0 {
		return nil, fmt.Errorf("\"gpus\" is absent or empty: the file lists no GPU")
	}
	m := &Matrix{NICs: make(map[string][]string, len(f.NICTopology))}
	seen := map[int]bool{}
	for i, g := range f.GPUs {
		if g.ID == nil {
			return nil, fmt.Errorf("gpus[%d] has no gpu_id", i)
		}
		if seen[*g.ID] {
			return nil, fmt.Errorf("gpus[%d]: gpu_id %d appears twice", i, *g.ID)
		}
		seen[*g.ID] = true
		numa := -1
		if g.NUMANode != nil && *g.NUMANode >= 0 {
			numa = *g.NUMANode
		}
		m.GPUs = append(m.GPUs, GPU{ID: *g.ID, PCIAddress: g.PCIAddress, NUMANode: numa, UUID: strings.TrimSpace(g.UUID), Name: strings.TrimSpace(g.DeviceName)})
	}
	for nic, row := range f.NICTopology {
		if nic == "" {
			return nil, fmt.Errorf("nic_topology has an entry with an empty NIC name")
		}
		if len(row) != len(m.GPUs) {
			return nil, fmt.Errorf("nic_topology[%q] has %d entries, want one per GPU (%d)", nic, len(row), len(m.GPUs))
		}
		out := make([]string, len(row))
		for i, lvl := range row {
			lvl = strings.TrimSpace(lvl)
			if !ValidLevel(lvl) {
				return nil, fmt.Errorf("nic_topology[%q][%d] (GPU%d) is %q, not one of X, PIX, PXB, PHB, NODE, SYS, NV<n>", nic, i, m.GPUs[i].ID, row[i])
			}
			out[i] = lvl
		}
		m.NICs[nic] = out
	}
	return m, nil
}

// NUMASet returns the distinct known NUMA nodes of the GPUs (seed 4.1.2
// step 2: -1 is ignored).
func (m *Matrix) NUMASet() map[int]bool {
	set := map[int]bool{}
	for _, g := range m.GPUs {
		if g.NUMANode >= 0 {
			set[g.NUMANode] = true
		}
	}
	return set
}

// NICNames returns the NIC names of the matrix, sorted.
func (m *Matrix) NICNames() []string {
	names := make([]string, 0, len(m.NICs))
	for n := range m.NICs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Document is the full file the collector writes: the matrix plus the
// descriptive fields of NVSentinel's schema.
type Document struct {
	Version   string `json:"version"`
	Timestamp string `json:"timestamp"`
	NodeName  string `json:"node_name,omitempty"`
	*Matrix
}

// MarshalDocument renders m as a gpu_metadata.json file (version 1.0)
// stamped with node name and time.
func MarshalDocument(m *Matrix, nodeName string, now time.Time) ([]byte, error) {
	c := *m
	if c.NICs == nil {
		c.NICs = map[string][]string{}
	}
	if c.GPUs == nil {
		c.GPUs = []GPU{}
	}
	b, err := json.MarshalIndent(Document{Version: "1.0", Timestamp: now.UTC().Format(time.RFC3339), NodeName: nodeName, Matrix: &c}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Compare lists, in words an operator can act on, every way the two
// matrices disagree: GPU count, GPU order, NUMA node or PCI address, a NIC
// only one of them knows, and each differing cell. Names in the messages
// are taken from the matrices' Source. Nil or equal matrices give nil.
func Compare(a, b *Matrix) []string {
	if a == nil || b == nil {
		return nil
	}
	an, bn := label(a, "first"), label(b, "second")
	var out []string
	if len(a.GPUs) != len(b.GPUs) {
		out = append(out, fmt.Sprintf("%s lists %d GPUs, %s lists %d", an, len(a.GPUs), bn, len(b.GPUs)))
	}
	n := min(len(a.GPUs), len(b.GPUs))
	sameOrder := true
	for i := 0; i < n; i++ {
		ga, gb := a.GPUs[i], b.GPUs[i]
		if ga.ID != gb.ID {
			sameOrder = false
			out = append(out, fmt.Sprintf("GPU entry %d is GPU%d in %s but GPU%d in %s", i, ga.ID, an, gb.ID, bn))
			continue
		}
		if ga.NUMANode != gb.NUMANode {
			out = append(out, fmt.Sprintf("GPU%d: %s says NUMA node %d, %s says %d", ga.ID, an, ga.NUMANode, bn, gb.NUMANode))
		}
		if ga.PCIAddress != "" && gb.PCIAddress != "" && !strings.EqualFold(NormalizePCIAddress(ga.PCIAddress), NormalizePCIAddress(gb.PCIAddress)) {
			out = append(out, fmt.Sprintf("GPU%d: %s says PCI address %s, %s says %s", ga.ID, an, ga.PCIAddress, bn, gb.PCIAddress))
		}
	}
	for _, nic := range a.NICNames() {
		rb, ok := b.NICs[nic]
		if !ok {
			out = append(out, fmt.Sprintf("NIC %s is in %s but not in %s", nic, an, bn))
			continue
		}
		if !sameOrder {
			continue // cells of differently ordered GPUs are not comparable
		}
		ra, ok := a.NICs[nic]
		if !ok {
			continue
		}
		for i := 0; i < min(len(ra), len(rb), n); i++ {
			if ra[i] != rb[i] {
				out = append(out, fmt.Sprintf("NIC %s to GPU%d: %s says %s, %s says %s", nic, a.GPUs[i].ID, an, ra[i], bn, rb[i]))
			}
		}
	}
	for _, nic := range b.NICNames() {
		if _, ok := a.NICs[nic]; !ok {
			out = append(out, fmt.Sprintf("NIC %s is in %s but not in %s", nic, bn, an))
		}
	}
	return out
}

func label(m *Matrix, dflt string) string {
	if m.Source != "" {
		return m.Source
	}
	return dflt
}

// NormalizePCIAddress turns the forms tools print into sysfs's form:
// nvidia-smi's "00000000:18:00.0" becomes "0000:18:00.0", hex digits are
// lower-cased. Anything unrecognised is returned lower-cased and trimmed.
func NormalizePCIAddress(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || !strings.Contains(rest, ":") {
		return s
	}
	if len(dom) > 4 {
		if v, err := strconv.ParseUint(dom, 16, 32); err == nil {
			dom = fmt.Sprintf("%04x", v)
		}
	}
	return dom + ":" + rest
}

// Near lists the GPUs a NIC shares a PCIe switch with (PIX or PXB in the
// matrix): the GPUs whose traffic a fault of that NIC stalls first, which a
// scheduler can drain instead of the whole node.
func (m *Matrix) Near(nic string) []GPU {
	if m == nil {
		return nil
	}
	var out []GPU
	for i, level := range m.NICs[nic] {
		if (level == "PIX" || level == "PXB") && i < len(m.GPUs) {
			out = append(out, m.GPUs[i])
		}
	}
	return out
}

// Describe names GPUs as every NIC event and view does: index, PCI address
// and, where known, UUID, e.g. "GPU3 (0000:5d:00.0 GPU-8c1e…), GPU4"; ""
// for none.
func Describe(gs []GPU) string {
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		if ids := strings.TrimSpace(g.PCIAddress + " " + g.UUID); ids != "" {
			parts = append(parts, fmt.Sprintf("GPU%d (%s)", g.ID, ids))
		} else {
			parts = append(parts, fmt.Sprintf("GPU%d", g.ID))
		}
	}
	return strings.Join(parts, ", ")
}

// gpuModels names the PCI device IDs (vendor 0x10de) of the data-centre
// GPUs whose nodes have a known NIC complement: what a matrix derived from
// sysfs calls them, in nvidia-smi's words.
var gpuModels = map[string]string{
	"0x20b0": "NVIDIA A100-SXM4-40GB", "0x20b2": "NVIDIA A100-SXM4-80GB", "0x20b3": "NVIDIA A100-SXM-64GB",
	"0x20b5": "NVIDIA A100 80GB PCIe", "0x20f1": "NVIDIA A100-PCIE-40GB",
	"0x2330": "NVIDIA H100 80GB HBM3", "0x2331": "NVIDIA H100 PCIe", "0x2335": "NVIDIA H200",
	"0x2324": "NVIDIA H800", "0x2901": "NVIDIA B200",
}

// ModelOf is the product name of an NVIDIA PCI device ID ("" when unknown).
func ModelOf(deviceID string) string { return gpuModels[strings.ToLower(strings.TrimSpace(deviceID))] }
