package nvsmi

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/gpumeta"
)

// TestParse_Golden parses every sample output in testdata and compares it
// with the gpu_metadata.json-shaped file beside it. The samples cover the
// formats operators paste (seed 4: "ANSI escape codes, NICn legend
// remapping, wrapped headers, Grace NUMA ranges").
func TestParse_Golden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".txt") + ".json")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(bytes.NewReader(in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Source != gpumeta.SourceNvidiaSMI {
				t.Errorf("Source = %q", got.Source)
			}
			gotJSON, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if err := json.Unmarshal(gotJSON, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("got  %s\nwant %s", gotJSON, bytes.TrimSpace(want))
			}
			// What Parse produces must load back as a valid metadata file.
			if _, err := gpumeta.Decode(gotJSON); err != nil {
				t.Errorf("output does not decode as gpu_metadata.json: %v", err)
			}
		})
	}
}

// TestParse_Mangled checks that a paste that cannot be read without
// guessing fails with the line and column of the damage, never with a
// silently shifted matrix.
func TestParse_Mangled(t *testing.T) {
	tests := []struct {
		file      string
		line, col int
		contains  string
	}{
		{"glued-cells", 2, 45, `"PIXNODE" under NIC0`},
		{"glued-header", 1, 2, `"GPU0GPU1"`},
		{"glued-header-nic", 1, 57, `"NIC3NIC4"`},
		{"glued-info", 1, 92, `"CPU" does not continue as "CPU Affinity"`},
		{"nic-row-lost-cell", 13, 0, "row NIC3"},
		{"gpu-row-lost-cell", 5, 0, "row GPU3"},
		{"asymmetric", 10, 6, "rows are shifted"},
		{"truncated", 0, 0, "no row for GPU3"},
		{"not-topo", 0, 0, "no `nvidia-smi topo -m` header"},
		{"legend-duplicate", 0, 0, "both name device mlx5_0"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "bad", tc.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(bytes.NewReader(in))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", m)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", pe.Line, tc.line, err)
			}
			if tc.col != 0 && pe.Col != tc.col {
				t.Errorf("col = %d, want %d (%v)", pe.Col, tc.col, err)
			}
			if tc.line != 0 && pe.Col == 0 {
				t.Errorf("no column in %v", err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not mention %q", err, tc.contains)
			}
		})
	}
}

// TestParse_Cells covers single rules with small inline outputs.
func TestParse_Cells(t *testing.T) {
	const hdr = "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
	tests := []struct {
		name     string
		in       string
		numa     []int
		nic0     []string
		errMatch string
	}{
		{
			name: "self cells without padding and empty trailing fields",
			in:   hdr + "GPU0\tX\tNV4\tPIX\t0-7\t0\t\tN/A\t\t\nGPU1\tNV4\tX\tSYS\t8-15\t1\t\tN/A\nNIC0\tPIX\tSYS\tX\t\t\t\n",
			numa: []int{0, 1}, nic0: []string{"PIX", "SYS"},
		},
		{
			name: "NUMA ranges and N/A",
			in:   hdr + "GPU0\t X \tNV18\tSYS\t0-71\t0,3-9,11-17\t2\nGPU1\tNV18\t X \tSYS\tN/A\tN/A\tN/A\n",
			numa: []int{0, -1}, nic0: []string{"SYS", "SYS"},
		},
		{
			name: "unknown extra column keeps its place",
			in:   "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\tFuture\nGPU0\t X \tPXB\t0-7\t3\tN/A\tyes\n",
			numa: []int{3}, nic0: []string{"PXB"},
		},
		{
			name: "no NUMA column",
			in:   "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\nGPU0\t X \tSOC\tPIX\t0-9\nGPU1\tSOC\t X \tSOC\t10-19\n",
			numa: []int{-1, -1},
		},
		{
			name:     "too many values after the cells",
			in:       hdr + "GPU0\t X \tNV4\tPIX\t0-7\t0\tN/A\t5\nGPU1\tNV4\t X \tSYS\t8-15\t1\tN/A\n",
			errMatch: "line 2, column 28: row GPU0 has 4 values after its cells",
		},
		{
			name:     "X off the diagonal",
			in:       hdr + "GPU0\tNV4\t X \tPIX\t0-7\t0\tN/A\nGPU1\tNV4\t X \tSYS\t8-15\t1\tN/A\n",
			errMatch: "line 2, column 6: row GPU0 has \"NV4\" under its own column",
		},
		{
			name:     "level among affinity values",
			in:       "\tGPU0\tNIC0\tCPU Affinity\nGPU0\t X \tPIX\tSYS\n",
			errMatch: "line 2, column 14: row GPU0 has the topology level \"SYS\"",
		},
		{
			name:     "GPU column after NIC column",
			in:       "\tGPU0\tNIC0\tGPU1\tCPU Affinity\n",
			errMatch: "line 1, column 12: GPU column \"GPU1\" after NIC columns",
		},
		{
			name:     "second row for a GPU",
			in:       "\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\nGPU0\t X \t0-7\n",
			errMatch: "line 3, column 1: second row for GPU0 (first on line 2)",
		},
		{
			name:     "row label glued to its first cell",
			in:       "\tGPU0\tNIC0\tCPU Affinity\nGPU0X\tPIX\t0-7\n",
			errMatch: "line 2, column 1: row label \"GPU0X\" is glued",
		},
		{
			name:     "unknown level",
			in:       "\tGPU0\tNIC0\nGPU0\t X \tPCI\n",
			errMatch: "line 2, column 10: cell \"PCI\" under NIC0 is not a topology level",
		},
		{
			name:     "empty input",
			in:       "",
			errMatch: "no `nvidia-smi topo -m` header found",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(strings.NewReader(tc.in))
			if tc.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errMatch) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.errMatch)
				}
				if !IsParseError(err) {
					t.Errorf("%v is not a ParseError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var numa []int
			for _, g := range m.GPUs {
				numa = append(numa, g.NUMANode)
			}
			if !reflect.DeepEqual(numa, tc.numa) {
				t.Errorf("numa = %v, want %v", numa, tc.numa)
			}
			if tc.nic0 != nil && !reflect.DeepEqual(m.NICs["NIC0"], tc.nic0) {
				t.Errorf("NIC0 = %v, want %v", m.NICs["NIC0"], tc.nic0)
			}
		})
	}
}

// TestParse_TooLarge refuses input beyond MaxInput instead of buffering it.
func TestParse_TooLarge(t *testing.T) {
	big := strings.Repeat("x", MaxInput+10)
	if _, err := Parse(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParse: whatever is pasted, Parse returns a matrix or an error and
// never panics; a matrix it returns is always a valid metadata file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files[:min(3, len(files))] {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := gpumeta.Decode(out); err != nil {
			t.Fatalf("Parse produced an invalid matrix %s: %v", out, err)
		}
	})
}
