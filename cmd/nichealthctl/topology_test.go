package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sim"
)

const nvsmiTestdata = "../../topology/nvsmi/testdata"

func runTopo(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runTopology(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func sameJSON(t *testing.T, got, wantFile string) {
	t.Helper()
	want, err := os.ReadFile(wantFile)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(got), &a); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestTopology_Parse(t *testing.T) {
	sample := filepath.Join(nvsmiTestdata, "dgx-h100.txt")
	golden := filepath.Join(nvsmiTestdata, "dgx-h100.json")
	in, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("file", func(t *testing.T) {
		code, out, errs := runTopo(t, "", "parse", sample)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		sameJSON(t, out, golden)
	})
	t.Run("stdin dash", func(t *testing.T) {
		code, out, errs := runTopo(t, string(in), "parse", "-")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		sameJSON(t, out, golden)
	})
	t.Run("stdin implicit", func(t *testing.T) {
		code, out, _ := runTopo(t, string(in), "parse")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		sameJSON(t, out, golden)
	})
	t.Run("mangled names line and column", func(t *testing.T) {
		bad := filepath.Join(nvsmiTestdata, "bad", "glued-cells.txt")
		code, out, errs := runTopo(t, "", "parse", bad)
		if code != exitFailed || out != "" {
			t.Fatalf("exit %d, stdout %q", code, out)
		}
		if !strings.Contains(errs, bad+": line 2, column 45") {
			t.Errorf("stderr = %q", errs)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		code, _, errs := runTopo(t, "", "parse", filepath.Join(t.TempDir(), "none.txt"))
		if code != exitFailed || !strings.Contains(errs, "no such file") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
	t.Run("two files is a usage error", func(t *testing.T) {
		if code, _, _ := runTopo(t, "", "parse", "a", "b"); code != exitUsage {
			t.Errorf("exit %d", code)
		}
	})
	t.Run("unknown flag is a usage error", func(t *testing.T) {
		if code, _, _ := runTopo(t, "", "parse", "--bogus"); code != exitUsage {
			t.Errorf("exit %d", code)
		}
	})
}

func TestTopology_Usage(t *testing.T) {
	if code, _, errs := runTopo(t, ""); code != exitUsage || !strings.Contains(errs, "missing subcommand") {
		t.Errorf("no subcommand: exit %d %q", code, errs)
	}
	if code, _, errs := runTopo(t, "", "frobnicate"); code != exitUsage || !strings.Contains(errs, `unknown subcommand "frobnicate"`) {
		t.Errorf("unknown: exit %d %q", code, errs)
	}
	if code, out, _ := runTopo(t, "", "--help"); code != exitOK || !strings.Contains(out, "collect") {
		t.Errorf("help: exit %d %q", code, out)
	}
	if code, _, _ := runTopo(t, "", "collect", "extra"); code != exitUsage {
		t.Errorf("collect extra: exit %d", code)
	}
	if code, _, _ := runTopo(t, "", "show", "extra"); code != exitUsage {
		t.Errorf("show extra: exit %d", code)
	}
}

// fakeNvidiaSMI writes a script that answers like nvidia-smi: the topo
// matrix of a sample file, and the PCI bus ids query.
func fakeNvidiaSMI(t *testing.T, sample, busIDs string, failQuery bool) string {
	t.Helper()
	dir := t.TempDir()
	abs, err := filepath.Abs(sample)
	if err != nil {
		t.Fatal(err)
	}
	query := "printf '" + busIDs + "'"
	if failQuery {
		query = "echo 'Field \"pci.bus_id\" is not a valid field to query.' >&2; exit 2"
	}
	script := "#!/bin/sh\ncase \"$1\" in\n" +
		"topo) cat '" + abs + "' ;;\n" +
		"--query-gpu=index,pci.bus_id) " + query + " ;;\n" +
		"*) echo \"unexpected arguments: $*\" >&2; exit 9 ;;\nesac\n"
	p := filepath.Join(dir, "nvidia-smi")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTopology_Collect(t *testing.T) {
	sample := filepath.Join(nvsmiTestdata, "l40s-oci.txt")
	ids := `0, 00000000:21:00.0\n1, 00000000:31:00.0\n2, 00000000:A1:00.0\n3, 00000000:B1:00.0\n`
	t.Run("writes the metadata file atomically", func(t *testing.T) {
		smi := fakeNvidiaSMI(t, sample, ids, false)
		out := filepath.Join(t.TempDir(), "var", "lib", "nvsentinel", "gpu_metadata.json")
		code, stdout, errs := runTopo(t, "", "collect", "--output", out, "--nvidia-smi", smi, "--node-name", "gpu-node-7")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(stdout, "4 GPUs, 6 NICs") {
			t.Errorf("stdout = %q", stdout)
		}
		st, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("mode = %v", st.Mode().Perm())
		}
		m, err := gpumeta.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		wantAddr := []string{"0000:21:00.0", "0000:31:00.0", "0000:a1:00.0", "0000:b1:00.0"}
		for i, g := range m.GPUs {
			if g.PCIAddress != wantAddr[i] {
				t.Errorf("GPU%d address %q, want %q", g.ID, g.PCIAddress, wantAddr[i])
			}
		}
		if len(m.NICs) != 6 {
			t.Errorf("NICs = %v", m.NICs)
		}
		b, _ := os.ReadFile(out)
		if !strings.Contains(string(b), `"node_name": "gpu-node-7"`) {
			t.Errorf("no node_name in %s", b)
		}
		ents, _ := os.ReadDir(filepath.Dir(out))
		if len(ents) != 1 {
			t.Errorf("temp files left behind: %v", ents)
		}
		// A second run replaces the file.
		if code, _, errs := runTopo(t, "", "collect", "--output", out, "--nvidia-smi", smi); code != exitOK {
			t.Fatalf("second run: exit %d: %s", code, errs)
		}
	})
	t.Run("PCI query failing is only a warning", func(t *testing.T) {
		smi := fakeNvidiaSMI(t, sample, ids, true)
		out := filepath.Join(t.TempDir(), "gpu_metadata.json")
		code, _, errs := runTopo(t, "", "collect", "--output", out, "--nvidia-smi", smi)
		if code != exitOK || !strings.Contains(errs, "warning: no GPU PCI addresses") {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if _, err := gpumeta.Load(out); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unreadable topo output fails and names the place", func(t *testing.T) {
		smi := fakeNvidiaSMI(t, filepath.Join(nvsmiTestdata, "bad", "not-topo.txt"), ids, false)
		out := filepath.Join(t.TempDir(), "gpu_metadata.json")
		code, _, errs := runTopo(t, "", "collect", "--output", out, "--nvidia-smi", smi)
		if code != exitFailed || !strings.Contains(errs, "no `nvidia-smi topo -m` header") {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("a file was written")
		}
	})
	t.Run("nvidia-smi failing", func(t *testing.T) {
		dir := t.TempDir()
		smi := filepath.Join(dir, "nvidia-smi")
		if err := os.WriteFile(smi, []byte("#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the NVIDIA driver.' >&2\nexit 9\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runTopo(t, "", "collect", "--output", filepath.Join(dir, "x.json"), "--nvidia-smi", smi)
		if code != exitFailed || !strings.Contains(errs, "couldn't communicate with the NVIDIA driver") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	t.Run("nvidia-smi not installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		code, _, errs := runTopo(t, "", "collect", "--output", filepath.Join(t.TempDir(), "x.json"))
		if code != exitFailed {
			t.Fatalf("exit %d", code)
		}
		for _, s := range []string{"nvidia-smi is not installed", `topologySource = "sysfs"`} {
			if !strings.Contains(errs, s) {
				t.Errorf("stderr %q lacks %q", errs, s)
			}
		}
	})
	t.Run("--nvidia-smi path missing", func(t *testing.T) {
		code, _, errs := runTopo(t, "", "collect", "--nvidia-smi", filepath.Join(t.TempDir(), "nope"), "--output", filepath.Join(t.TempDir(), "x.json"))
		if code != exitFailed || !strings.Contains(errs, "no such file") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
}

func TestTopology_ParseBusIDs(t *testing.T) {
	got := parseBusIDs([]byte("0, 00000000:18:00.0\n1, 00000016:03:00.0\r\ngarbage\n-1, 0000:01:00.0\nx, y\n"))
	want := map[int]string{0: "0000:18:00.0", 1: "0016:03:00.0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestTopology_Show classifies a simulated on-prem L40S with a bonded
// default route, from the metadata and from sysfs alone.
func TestTopology_Show(t *testing.T) {
	root := filepath.Join(t.TempDir(), "h")
	h, err := sim.BuildWith(root, "l40s-onprem", sim.BuildOptions{Bond: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("table", func(t *testing.T) {
		code, out, errs := runTopo(t, "", "show", "--root", root)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, s := range []string{"GPU topology from metadata", "DEVICE", "REASON",
			"Management: carries the default route (via bond0)",
			"Compute: InfiniBand link layer, no PCIe switch shared with a GPU"} {
			if !strings.Contains(out, s) {
				t.Errorf("output lacks %q:\n%s", s, out)
			}
		}
	})
	t.Run("json from sysfs", func(t *testing.T) {
		code, out, errs := runTopo(t, "", "show", "--root", root, "--source", "sysfs", "--json")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var v struct {
			Source string `json:"source"`
			NICs   []struct {
				Device, Role string
			} `json:"nics"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if v.Source != gpumeta.SourceSysfs || len(v.NICs) != 5 {
			t.Fatalf("got %+v", v)
		}
		for _, n := range v.NICs {
			d, _ := h.Device(n.Device)
			if n.Role != string(d.ExpectedRole) {
				t.Errorf("%s: %s, want %s", n.Device, n.Role, d.ExpectedRole)
			}
		}
	})
	t.Run("sysfs root and procfs root", func(t *testing.T) {
		code, out, errs := runTopo(t, "", "show", "--sysfs-root", h.SysRoot(), "--procfs-root", h.ProcRoot(), "--source", "sysfs")
		if code != exitOK || !strings.Contains(out, "via bond0") {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
	})
	// The daemon's classification, override branch included: under a
	// configuration that hand-pins the NIC list, the roles follow the
	// link layer and no GPU topology is consulted.
	t.Run("pinned by the configuration", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(cfg, []byte("nicInclusionRegexOverride = \"^mlx5_0$\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runTopo(t, "", "show", "--root", root, "--config", cfg, "--json")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var v struct {
			Source string `json:"source"`
			NICs   []struct {
				Device, Role, Reason string
			} `json:"nics"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(v.Source, "nicInclusionRegexOverride") || len(v.NICs) != 1 || v.NICs[0].Device != "mlx5_0" ||
			v.NICs[0].Reason != v.NICs[0].Role+": pinned by nicInclusionRegexOverride" {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("no topology", func(t *testing.T) {
		code, _, errs := runTopo(t, "", "show", "--root", root, "--source", "metadata", "--metadata", filepath.Join(t.TempDir(), "none.json"))
		if code != exitFailed || !strings.Contains(errs, "nichealthctl topology collect") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	t.Run("root not a directory", func(t *testing.T) {
		code, _, errs := runTopo(t, "", "show", "--root", filepath.Join(t.TempDir(), "none"))
		if code != exitFailed || !strings.Contains(errs, "is not a directory") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
}
