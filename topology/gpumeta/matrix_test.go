package gpumeta

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpu_metadata.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGPUMeta_12_2_Load reads the collector's file: the full schema with
// fields this package ignores, and every way the file can be wrong.
func TestGPUMeta_12_2_Load(t *testing.T) {
	full := `{
  "version": "1.0",
  "timestamp": "2025-03-04T09:12:44Z",
  "node_name": "gpu-node-42",
  "driver_version": "550.90.07",
  "cuda_driver_version": "12.4",
  "gpus": [
    {"gpu_id": 0, "uuid": "GPU-1", "pci_address": "0000:0f:00.0", "serial_number": "1652", "device_name": "NVIDIA H100 80GB HBM3", "numa_node": 0, "nvlinks": [{"link": 0, "remote": "GPU-2"}]},
    {"gpu_id": 1, "uuid": "GPU-2", "pci_address": "0000:15:00.0", "serial_number": "1653", "device_name": "NVIDIA H100 80GB HBM3", "numa_node": 1}
  ],
  "nic_topology": {
    "mlx5_0": ["SYS", "SYS"],
    "mlx5_1": ["PIX", "SYS"],
    "mlx5_2": ["SYS", "PIX"],
    "mlx5_8": ["NODE", "NODE"],
    "mlx5_9": ["NV18", " PHB "]
  }
}`
	tests := []struct {
		name    string
		content string
		want    *Matrix
		errHas  []string
	}{
		{
			name:    "full collector schema",
			content: full,
			want: &Matrix{
				GPUs: []GPU{{0, "0000:0f:00.0", 0, "GPU-1", "NVIDIA H100 80GB HBM3"}, {1, "0000:15:00.0", 1, "GPU-2", "NVIDIA H100 80GB HBM3"}},
				NICs: map[string][]string{
					"mlx5_0": {"SYS", "SYS"}, "mlx5_1": {"PIX", "SYS"}, "mlx5_2": {"SYS", "PIX"},
					"mlx5_8": {"NODE", "NODE"}, "mlx5_9": {"NV18", "PHB"},
				},
			},
		},
		{
			name:    "numa_node absent or negative is unknown",
			content: `{"gpus":[{"gpu_id":0},{"gpu_id":1,"numa_node":-1},{"gpu_id":2,"numa_node":3}],"nic_topology":{}}`,
			want:    &Matrix{GPUs: []GPU{{0, "", -1, "", ""}, {1, "", -1, "", ""}, {2, "", 3, "", ""}}, NICs: map[string][]string{}},
		},
		{
			name:    "nic_topology absent: a node without RDMA NICs",
			content: `{"gpus":[{"gpu_id":0,"numa_node":0}]}`,
			want:    &Matrix{GPUs: []GPU{{0, "", 0, "", ""}}, NICs: map[string][]string{}},
		},
		{name: "not JSON", content: `{"gpus": [`, errHas: []string{"not valid JSON"}},
		{name: "empty file", content: ``, errHas: []string{"not valid JSON"}},
		{name: "no gpus", content: `{"nic_topology":{"mlx5_0":[]}}`, errHas: []string{`"gpus" is absent or empty`}},
		{name: "gpu without id", content: `{"gpus":[{"numa_node":0}]}`, errHas: []string{"gpus[0] has no gpu_id"}},
		{name: "duplicate gpu id", content: `{"gpus":[{"gpu_id":0},{"gpu_id":0}]}`, errHas: []string{"gpu_id 0 appears twice"}},
		{
			name:    "row length differs from GPU count",
			content: `{"gpus":[{"gpu_id":0},{"gpu_id":1}],"nic_topology":{"mlx5_3":["PIX"]}}`,
			errHas:  []string{`nic_topology["mlx5_3"] has 1 entries`, "one per GPU (2)"},
		},
		{
			name:    "unknown level",
			content: `{"gpus":[{"gpu_id":0},{"gpu_id":7}],"nic_topology":{"mlx5_3":["PIX","PCIE"]}}`,
			errHas:  []string{`nic_topology["mlx5_3"][1] (GPU7) is "PCIE"`},
		},
		{name: "NV without count", content: `{"gpus":[{"gpu_id":0}],"nic_topology":{"mlx5_3":["NV"]}}`, errHas: []string{`is "NV"`}},
		{name: "wrong type", content: `{"gpus":[{"gpu_id":"zero"}]}`, errHas: []string{"not valid JSON: line 1: gpus.gpu_id: a string where a number belongs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.content)
			m, err := Load(p)
			if tc.errHas != nil {
				if err == nil {
					t.Fatalf("Load succeeded: %+v", m)
				}
				for _, s := range append(tc.errHas, p) {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Source != "metadata "+p {
				t.Errorf("Source = %q", m.Source)
			}
			m.Source = ""
			if !reflect.DeepEqual(m, tc.want) {
				t.Errorf("got %+v, want %+v", m, tc.want)
			}
		})
	}
}

func TestGPUMeta_12_2_LoadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.json")
	_, err := Load(p)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want fs.ErrNotExist naming %s", err, p)
	}
}

func TestGPUMeta_ValidLevel(t *testing.T) {
	for _, s := range []string{"X", "PIX", "PXB", "PHB", "NODE", "SYS", "NV1", "NV18"} {
		if !ValidLevel(s) {
			t.Errorf("ValidLevel(%q) = false", s)
		}
	}
	for _, s := range []string{"", "x", "SOC", "NV", "NV0", "NV-1", "NV+2", "NVx", "PIXNODE", " PIX"} {
		if ValidLevel(s) {
			t.Errorf("ValidLevel(%q) = true", s)
		}
	}
}

// TestGPUMeta_DESIGN7_Compare: the disagreements the daemon logs in auto
// mode name the GPU or NIC and what each source says.
func TestGPUMeta_DESIGN7_Compare(t *testing.T) {
	a := &Matrix{Source: "metadata", GPUs: []GPU{{0, "0000:0f:00.0", 0, "", ""}, {1, "0000:15:00.0", 1, "", ""}},
		NICs: map[string][]string{"mlx5_0": {"PIX", "SYS"}, "mlx5_1": {"SYS", "PXB"}, "mlx5_7": {"SYS", "SYS"}}}
	b := &Matrix{Source: "sysfs", GPUs: []GPU{{0, "00000000:0F:00.0", 0, "", ""}, {1, "0000:16:00.0", 0, "", ""}},
		NICs: map[string][]string{"mlx5_0": {"PIX", "SYS"}, "mlx5_1": {"SYS", "PIX"}, "mlx5_9": {"NODE", "SYS"}}}
	got := Compare(a, b)
	want := []string{
		"GPU1: metadata says NUMA node 1, sysfs says 0",
		"GPU1: metadata says PCI address 0000:15:00.0, sysfs says 0000:16:00.0",
		"NIC mlx5_1 to GPU1: metadata says PXB, sysfs says PIX",
		"NIC mlx5_7 is in metadata but not in sysfs",
		"NIC mlx5_9 is in sysfs but not in metadata",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := Compare(a, a); d != nil {
		t.Errorf("Compare(a, a) = %v", d)
	}
	if d := Compare(nil, a); d != nil {
		t.Errorf("Compare(nil, a) = %v", d)
	}
	c := &Matrix{GPUs: []GPU{{1, "", 1, "", ""}}, NICs: map[string][]string{"mlx5_0": {"SYS"}}}
	got = Compare(a, c)
	want = []string{"metadata lists 2 GPUs, second lists 1", "GPU entry 0 is GPU0 in metadata but GPU1 in second", "NIC mlx5_1 is in metadata but not in second", "NIC mlx5_7 is in metadata but not in second"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare with reordered GPUs =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestGPUMeta_NormalizePCIAddress(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:0F:00.0": "0000:0f:00.0",
		"00000016:03:00.0": "0016:03:00.0",
		"0000:3b:00.1":     "0000:3b:00.1",
		" 0000:3B:00.1\n":  "0000:3b:00.1",
		"garbage":          "garbage",
		"00010000:00:01.0": "10000:00:01.0",
	} {
		if got := NormalizePCIAddress(in); got != want {
			t.Errorf("NormalizePCIAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGPUMeta_12_2_MarshalDocument writes what Load reads back.
func TestGPUMeta_12_2_MarshalDocument(t *testing.T) {
	m := &Matrix{GPUs: []GPU{{0, "0000:0f:00.0", 0, "", ""}}, NICs: map[string][]string{"mlx5_0": {"PIX"}}, Source: "x"}
	b, err := MarshalDocument(m, "node-1", time.Date(2025, 3, 4, 9, 12, 44, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"version": "1.0"`, `"timestamp": "2025-03-04T09:12:44Z"`, `"node_name": "node-1"`, `"gpu_id": 0`, `"nic_topology"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("document lacks %s:\n%s", s, b)
		}
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.GPUs, m.GPUs) || !reflect.DeepEqual(back.NICs, m.NICs) {
		t.Errorf("round trip = %+v", back)
	}
	empty, err := MarshalDocument(&Matrix{}, "", time.Unix(0, 0))
	if err != nil || !strings.Contains(string(empty), `"nic_topology": {}`) || !strings.Contains(string(empty), `"gpus": []`) {
		t.Errorf("empty matrix document = %s, %v", empty, err)
	}
}

// FuzzDecode: any file content gives a matrix or an error, never a panic,
// and every matrix obeys the row-length rule.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"gpus":[{"gpu_id":0,"numa_node":0}],"nic_topology":{"mlx5_0":["PIX"]}}`))
	f.Add([]byte(`{"gpus":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		for nic, row := range m.NICs {
			if len(row) != len(m.GPUs) {
				t.Fatalf("row %s has %d entries for %d GPUs", nic, len(row), len(m.GPUs))
			}
			for _, l := range row {
				if !ValidLevel(l) {
					t.Fatalf("invalid level %q accepted", l)
				}
			}
		}
	})
}
