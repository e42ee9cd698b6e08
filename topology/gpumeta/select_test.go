package gpumeta

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// TestGPUMeta_DESIGN7_Select covers topologySource = auto | metadata |
// sysfs on one simulated DGX H100, with the metadata file present,
// missing, corrupt and disagreeing.
func TestGPUMeta_DESIGN7_Select(t *testing.T) {
	h, devs := buildShape(t, "dgx-h100")
	good := h.MetadataPath()
	missing := filepath.Join(t.TempDir(), "missing.json")
	corrupt := filepath.Join(t.TempDir(), "corrupt.json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// The collector ran with a different cabling: mlx5_0 PXB instead of PIX.
	disagree := filepath.Join(t.TempDir(), "disagree.json")
	if err := os.WriteFile(disagree, []byte(strings.Replace(string(b), `"PIX"`, `"PXB"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A collector that lists SR-IOV VFs too: no note per VF.
	var vfName string
	for _, d := range devs {
		if d.IsVF {
			vfName = d.Name
			break
		}
	}
	if vfName == "" {
		t.Fatal("dgx-h100 has no VF")
	}
	withVF := filepath.Join(t.TempDir(), "with-vf.json")
	vfRow := `"nic_topology": {` + "\n" + `    "` + vfName + `": ["PIX","NODE","NODE","NODE","SYS","SYS","SYS","SYS"],`
	if err := os.WriteFile(withVF, []byte(strings.Replace(string(b), `"nic_topology": {`, vfRow, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	noGPUs := topology.Paths{SysfsRoot: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(noGPUs.SysfsRoot, "bus", "pci", "devices"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		source     string
		meta       string
		paths      topology.Paths
		wantSource string
		notes      []string
		errHas     []string
	}{
		{name: "auto prefers metadata, no disagreement", source: "auto", meta: good, paths: h.Paths(), wantSource: "metadata "},
		{name: "empty source means auto", source: "", meta: good, paths: h.Paths(), wantSource: "metadata "},
		{name: "auto ignores VF rows of the metadata", source: "auto", meta: withVF, paths: h.Paths(), wantSource: "metadata "},
		{name: "auto logs disagreements", source: "auto", meta: disagree, paths: h.Paths(), wantSource: "metadata ",
			notes: []string{"says PXB, sysfs says PIX"}},
		{name: "auto falls back to sysfs when the file is missing", source: "auto", meta: missing, paths: h.Paths(), wantSource: SourceSysfs,
			notes: []string{"derived from sysfs", missing + " does not exist"}},
		{name: "auto falls back to sysfs when the file is corrupt", source: "auto", meta: corrupt, paths: h.Paths(), wantSource: SourceSysfs,
			notes: []string{"ignoring unusable", corrupt, "not valid JSON"}},
		{name: "auto uses metadata when sysfs shows no GPU", source: "auto", meta: good, paths: noGPUs, wantSource: "metadata ",
			notes: []string{"cannot cross-check", "no NVIDIA GPU"}},
		{name: "auto with neither", source: "auto", meta: missing, paths: noGPUs,
			errHas: []string{missing, "no NVIDIA GPU", "NVSentinel's metadata collector", "nichealthctl topology collect", `topologySource = "sysfs"`}},
		{name: "metadata only", source: "metadata", meta: good, paths: noGPUs, wantSource: "metadata "},
		{name: "metadata missing is fatal", source: "metadata", meta: missing, paths: h.Paths(),
			errHas: []string{missing, "nichealthctl topology collect", `topologySource = "sysfs"`}},
		{name: "sysfs only", source: "sysfs", meta: good, paths: h.Paths(), wantSource: SourceSysfs},
		{name: "sysfs without GPUs", source: "sysfs", meta: good, paths: noGPUs, errHas: []string{"no NVIDIA GPU", `topologySource = "metadata"`}},
		{name: "unknown source", source: "nvml", meta: good, paths: h.Paths(), errHas: []string{`topologySource = "nvml" is not one of`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, notes, err := Select(tc.source, tc.meta, tc.paths, devs)
			if tc.errHas != nil {
				if err == nil {
					t.Fatalf("Select succeeded with %s", m.Source)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(m.Source, tc.wantSource) {
				t.Errorf("Source = %q, want %q", m.Source, tc.wantSource)
			}
			all := strings.Join(notes, "\n")
			for _, s := range tc.notes {
				if !strings.Contains(all, s) {
					t.Errorf("notes %q lack %q", all, s)
				}
			}
			if tc.notes == nil && len(notes) != 0 {
				t.Errorf("unexpected notes: %v", notes)
			}
		})
	}
}
