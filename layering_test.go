package nichealthd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The data flow of DESIGN.md section 1, as the packages carry it:
//
//	topology → event → observe → config → checks → checks/health → checks/runner → daemon → dbusapi / systemd / daemon/metrics
//
// topology reads and parses the host's files; event is the wire type
// every layer above speaks; observe turns the host into one typed
// observation per cycle; config is the configuration's model (the file,
// the counter and kernel-log pattern tables, the rules' settings), which
// the checks read and the daemon loads; each check judges the
// observation; checks/health folds the condition changes into the one
// verdict; checks/runner composes the checks for the daemon and the
// offline check; the daemon commits and publishes. Each package tree has a
// rank: an import may only point to a lower rank (or within its own tree).
// The views read the health snapshot and are driven by the daemon, so the
// daemon imports them and they never import it; no view imports another,
// parses what sysfs printed (the snapshot's state and rate are typed) or
// reads the outbox. persist is the state file and the outbox: only the
// daemon tree imports it (persist/outbox's records carry event's events).
var ranks = []struct {
	prefix string
	rank   int
}{
	// internal holds leaf packages that import nothing of ours (test
	// support, the log-repeat limiter).
	{"internal", -1},
	{"topology", 0},
	// mad is the node's InfiniBand management-datagram side: the
	// supervised helper, its protocol and the two readers that run on it
	// (the far end of the node's own cables, this host's share of the
	// fabric's switch ports). It imports only internal/ and its own tree,
	// and topology/ never imports it: a sibling of topology on the ground
	// floor, which observe, the checks and the daemon import.
	{"mad", 0},
	// event is the wire type every layer above speaks.
	{"event", 1},
	// observe is what the host shows, one typed observation per cycle.
	{"observe", 2},
	// config is the configuration's model: below the checks, which read
	// their tables and settings from it, and above observe, whose counter
	// path grammar the counter table is written in. It never imports a
	// check: a check's defaults that the file overrides are the file's.
	{"config", 3},
	{"checks/health", 5},
	// checks/runner runs the checks on the observations and builds what
	// the views show of each port: it composes the checks and the health
	// model for the daemon and the offline check.
	{"checks/runner", 6},
	{"checks", 4},
	{"persist", 4},
	{"daemon/metrics", 7},
	{"dbusapi", 7},
	{"systemd", 7},
	// The daemon's tree: its lifecycle and the packages only it uses
	// (daemon/sinkset runs the sinks, daemon/delivery moves their events
	// out of the outbox, daemon/sink holds the destinations).
	{"daemon", 8},
	// fabric is the fleet-side view (nichealth-fabric): it reads what the
	// fleet exports (Prometheus, status dumps) and never the daemon's
	// insides, and nothing of the node imports it.
	{"fabric", 9},
}

// pendingArrows are arrows against the rules that are known and being
// removed. The test fails when one of them disappears, so this list only
// shrinks; it is empty: the checks own their memory and persist stores it
// as their sections.
var pendingArrows = []string{}

const module = "github.com/nichealth/nichealthd/"

func rankOf(pkg string) (int, string, bool) {
	for _, r := range ranks {
		if pkg == r.prefix || strings.HasPrefix(pkg, r.prefix+"/") {
			return r.rank, r.prefix, true
		}
	}
	return 0, "", false
}

func TestLayering_ImportsFollowTheFlow(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var bad, seenPending []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := strings.TrimPrefix(f[0], module)
		fr, ftree, ok := rankOf(from)
		if !ok {
			continue // cmd/ and packaging/ tools may use anything
		}
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			tr, ttree, ok := rankOf(to)
			if !ok {
				bad = append(bad, from+" -> "+to+" (a library package imports a command)")
				continue
			}
			arrow := from + " -> " + to
			switch {
			case ftree == "fabric" && ttree != "fabric" && ttree != "internal":
				bad = append(bad, arrow+" (the fabric view reads what the fleet exports, not the daemon's packages)")
			case ftree == ttree:
				// within one tree
			case isView(ftree) && (to == "topology/sysfs" || strings.HasPrefix(to, "topology/sysfs/")):
				bad = append(bad, arrow+" (a view shows the snapshot's typed state and rate; it never parses what sysfs printed)")
			case ttree == "persist" && ftree != "daemon":
				if slices.Contains(pendingArrows, arrow) {
					seenPending = append(seenPending, arrow)
					continue
				}
				bad = append(bad, arrow+" (only the daemon imports persist)")
			case ftree == "daemon/metrics" && ttree == "dbusapi":
				bad = append(bad, arrow+" (metrics reads the health snapshot, not the D-Bus views)")
			case tr > fr:
				bad = append(bad, arrow+" (against the flow topology → checks → health → daemon → dbusapi/systemd/metrics)")
			case tr == fr && ftree != ttree && !(ttree == "persist" || ftree == "persist"):
				bad = append(bad, arrow+" (sibling views do not import each other)")
			}
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
	for _, p := range pendingArrows {
		if !slices.Contains(seenPending, p) {
			t.Errorf("%s is gone: remove it from pendingArrows so it cannot come back", p)
		}
	}
}

// isView reports whether a package tree is one of the views.
func isView(tree string) bool {
	return tree == "daemon/metrics" || tree == "dbusapi" || tree == "systemd"
}

// The command-line tool talks to the daemon over D-Bus and runs the offline
// check on observe and the checks: it links neither the daemon (its
// outbox, its sinks and their gRPC) nor the outbox. It does link persist:
// with the daemon down, `nichealthctl check` judges as the daemon will at
// its restart (DESIGN.md difference 17), from the daemon's state file and
// expected inventory, which only persist knows how to read (the envelope,
// its schema versions and migration, its boot ID). It reads them through
// persist.Peek and persist.PeekCrossBoot, which change nothing on disk
// (the daemon's Load moves a corrupt file aside and removes temporary
// files); persist itself is the envelope and a bounded read, small and
// free of gRPC. persist/outbox stays out: opening an outbox takes its
// lock and repairs torn tails, which only the daemon may do, and the
// events it holds beyond the state are re-detected on the daemon's first
// poll anyway.
func TestLayering_NichealthctlLinksNoDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./cmd/nichealthctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"observe") || !slices.Contains(deps, module+"checks/runner") {
		t.Fatalf("nichealthctl does not link observe and checks/runner; deps:\n%s", out)
	}
	for _, d := range deps {
		pkg := strings.TrimPrefix(d, module)
		switch {
		case pkg == "daemon" || strings.HasPrefix(pkg, "daemon/"):
			t.Errorf("nichealthctl links %s: the daemon's packages are the daemon's", pkg)
		case strings.HasPrefix(pkg, "persist/"):
			t.Errorf("nichealthctl links %s: only the daemon opens the outbox (persist.Peek reads the state file read-only)", pkg)
		case strings.HasPrefix(d, "google.golang.org/grpc"):
			t.Errorf("nichealthctl links %s: gRPC is the connector sink's", d)
		}
	}
}

// productBinaries are the commands the package installs (packaging/install.sh).
var productBinaries = []string{"./cmd/nichealthd", "./cmd/nichealthctl", "./cmd/nichealth-mad"}

// simulationMarkers are what a production file would name to find out
// whether it runs on the simulator's tree: the simulator's manifest, its
// errno table and statistics directory, the flag of the test build, and
// the names the old switch had. DESIGN.md section 10: the product has one
// code path, the real host's.
var simulationMarkers = []string{
	".nichealth-sim", "ethtool-stats", "ManifestName", "ErrnoTableName", "PHYStatsDir",
	"SimulatedHost", "SimulatedRoot", "IsSimulated", "simulate-root",
}

// The production binaries, built as they are shipped (no build tags), link
// no simulator package and no file of theirs refers to the simulator's
// marks: nothing in the product can ask whether the host is simulated.
func TestLayering_NoSimulationSwitchInTheProduct(t *testing.T) {
	args := append([]string{"list", "-deps", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}}`}, productBinaries...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) != 3 || !strings.HasPrefix(f[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		if pkg == "topology/sim" || strings.HasPrefix(pkg, "topology/sim/") {
			t.Errorf("a production binary links the simulator (%s): inject through Seams at construction or the simulate build tag", pkg)
			continue
		}
		for _, name := range strings.Fields(f[2]) {
			b, err := os.ReadFile(filepath.Join(f[1], name))
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, mark := range simulationMarkers {
				if strings.Contains(string(b), mark) {
					t.Errorf("%s/%s names %q: a production file must not look for the simulator (DESIGN.md section 10)", pkg, name, mark)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d production files checked; go list output:\n%s", checked, out)
	}
}

// persistReadOnly is what nichealthctl may use of persist: the read-only
// loaders, the boot ID and the pure tie of a state to a boot (it changes
// the copy in memory), and the names of what they return. Anything else
// (Load, Save, Store, CrossBootFile, WriteFileAtomic, CleanTemps) moves,
// cleans or writes the daemon's files.
var persistReadOnly = []string{
	"Peek", "PeekCrossBoot", "InventoryPath", "ReadBootID", "ApplyBoot",
	"ErrNewerSchema", "LoadFresh", "LoadCorrupt", "LoadLoaded", "BootSame", "BootRebooted", "BootFresh",
}

var persistUse = regexp.MustCompile(`\bpersist\.([A-Za-z_][A-Za-z0-9_]*)`)

// nichealthctl's code uses only persist's read-only half: a check that
// writes to the state directory could destroy what a stopped daemon left.
func TestLayering_NichealthctlReadsPersistReadOnly(t *testing.T) {
	files, err := filepath.Glob("cmd/nichealthctl/*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range persistUse.FindAllStringSubmatch(string(b), -1) {
			used++
			if !slices.Contains(persistReadOnly, m[1]) {
				t.Errorf("%s uses persist.%s: nichealthctl may only read the daemon's files (%s)", f, m[1], strings.Join(persistReadOnly, ", "))
			}
		}
	}
	if used == 0 {
		t.Fatal("nichealthctl uses nothing of persist: does it still read the state file when the daemon is down?")
	}
}
