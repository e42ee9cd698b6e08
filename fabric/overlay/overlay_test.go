package overlay

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

func ibnetGUID(v uint64) ibnet.GUID { return ibnet.GUID(v) }

func TestFabric_12_StatusDumps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a017.json", `{"nodeName":"gpu-a017","ports":[
		{"device":"mlx5_0","port":1,"nodeGUID":"0xb83fd20300a0b010","portGUID":"0xb83fd20300a0b010","verdict":"healthy","state":"ACTIVE","physState":"LinkUp","conditions":[],"cableDirection":"sideways"},
		{"device":"mlx5_3","port":1,"nodeGUID":"0xb83fd20300a0b040","portGUID":"","verdict":"fatal","state":"DOWN","physState":"Disabled","cableDirection":"from-host","cableSuspect":"cable",
		 "conditions":[{"fatal":true,"message":"Port mlx5_3 port 1: state DOWN, phys_state Disabled"}]}]}`)
	write("old.json", `{"nodeName":"gpu-a018","healthy":true}`)
	write("garbage.json", `not json`)
	write("notes.txt", `ignored: not *.json`)
	o, probs, err := FromStatusDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 2 || !strings.Contains(probs[0].Error(), "garbage.json") || !strings.Contains(probs[1].Error(), "no ports") {
		t.Errorf("problems %v", probs)
	}
	if len(o.Ports) != 2 {
		t.Fatalf("ports %+v", o.Ports)
	}
	// By port GUID, and by node GUID and port when the dump has no port GUID.
	if p := o.Lookup(0, 1, 0xb83fd20300a0b010); p == nil || p.Verdict != Healthy || p.Node != "gpu-a017" {
		t.Errorf("mlx5_0: %+v", p)
	}
	p := o.Lookup(0xb83fd20300a0b040, 1, 0x1234)
	if p == nil || p.Verdict != Fatal || p.State != "DOWN/Disabled" || len(p.Conditions) != 2 || p.Device != "mlx5_3" {
		t.Errorf("mlx5_3: %+v", p)
	}
	if p := o.Lookup(0, 1, 0xb83fd20300a0b010); p == nil || p.Cable != "" {
		t.Errorf("a clean cable has a direction: %+v", p)
	}
	if p.Cable != "from-host" || !slices.Contains(p.Conditions, "cable: errors from-host, suspect cable") {
		t.Errorf("mlx5_3's cable verdict: %q %v", p.Cable, p.Conditions)
	}
	if o.Lookup(0xb83fd20300a0b040, 2, 0) != nil {
		t.Error("port 2 was never reported")
	}
	if _, _, err := FromStatusDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory must be an error")
	}
}

// The same port in two reports keeps the worse verdict.
func TestFabric_12_WorseReportWins(t *testing.T) {
	o := newOverlay("test")
	o.add(&Port{NodeGUID: 1, Port: 1, Verdict: Healthy})
	o.add(&Port{NodeGUID: 1, Port: 1, Verdict: Fatal, Conditions: []string{"x"}})
	o.add(&Port{NodeGUID: 1, Port: 1, Verdict: Degraded})
	if p := o.Lookup(1, 1, 0); p.Verdict != Fatal || len(o.Ports) != 1 || len(p.Conditions) != 1 {
		t.Errorf("%+v", o.Ports)
	}
	if Worse(NotReported, Healthy) != Healthy || Worse(Fatal, NotReported) != Fatal || Worse(Unknown, Healthy) != Healthy || Worse(NotReported, Unknown) != Unknown {
		t.Error("unknown is better than any verdict")
	}
}

// What the Prometheus client does with answers that are not a fleet's:
// an API error, a non-API page, a URL that is not http. (The real engine
// is asked in cmd/nichealthd's fabric end-to-end test.)
func TestFabric_12_PrometheusErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("query") {
		case Queries.Info:
			if strings.HasPrefix(r.URL.Path, "/bad") {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
				return
			}
			if strings.HasPrefix(r.URL.Path, "/html") {
				w.Write([]byte(`<html>login</html>`))
				return
			}
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := FromPrometheus(ctx, srv.Client(), srv.URL+"/bad"); err == nil || !strings.Contains(err.Error(), "bad_data: parse error") {
		t.Errorf("API error: %v", err)
	}
	if _, err := FromPrometheus(ctx, srv.Client(), srv.URL+"/html"); err == nil || !strings.Contains(err.Error(), "not a Prometheus API answer") {
		t.Errorf("HTML page: %v", err)
	}
	if _, err := FromPrometheus(ctx, srv.Client(), "prometheus:9090"); err == nil {
		t.Error("a URL without scheme must be refused")
	}
	o, err := FromPrometheus(ctx, srv.Client(), srv.URL)
	if err != nil || len(o.Ports) != 0 {
		t.Errorf("empty fleet: %v %+v", err, o)
	}
}

// Issue 32 row 1: a status dump whose verdict is markup reached the page's
// innerHTML. The overlay keeps a closed vocabulary: anything but the three
// words nichealthd prints is Unknown, and only the vocabulary's words
// ever leave the overlay; names, devices and conditions stay data.
func TestBounded_1_StatusVerdictIsAClosedVocabulary(t *testing.T) {
	dir := t.TempDir()
	hostile := `\"><img src=x onerror=alert(1)>`
	body := `{"nodeName":"<script>n</script>","ports":[
		{"device":"<b>mlx5_0</b>","port":1,"nodeGUID":"0x1","verdict":"` + hostile + `","conditions":[{"message":"<img src=y onerror=alert(2)>"}]},
		{"device":"mlx5_1","port":1,"nodeGUID":"0x2","verdict":"FATAL"},
		{"device":"mlx5_2","port":1,"nodeGUID":"0x3","verdict":"fatal"},
		{"device":"mlx5_3","port":1,"nodeGUID":"0x4","verdict":"degraded"},
		{"device":"mlx5_4","port":1,"nodeGUID":"0x5","verdict":"healthy"},
		{"device":"mlx5_5","port":1,"nodeGUID":"0x6","verdict":""}]}`
	if err := os.WriteFile(filepath.Join(dir, "n.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	o, probs, err := FromStatusDir(dir)
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	for guid, want := range map[uint64]Verdict{1: Unknown, 2: Unknown, 3: Fatal, 4: Degraded, 5: Healthy, 6: NotReported} {
		p := o.Lookup(ibnetGUID(guid), 1, 0)
		if p == nil || p.Verdict != want {
			t.Errorf("port of node %#x: %+v, want verdict %v", guid, p, want)
		}
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "onerror=alert(1)") {
		t.Errorf("the hostile verdict left the overlay: %s", out)
	}
	if !strings.Contains(string(out), `"verdict":"unknown"`) {
		t.Errorf("no unknown verdict in %s", out)
	}
	// The rest is data, kept as it was said: the views show it as text.
	if p := o.Lookup(1, 1, 0); p.Node != "<script>n</script>" || p.Device != "<b>mlx5_0</b>" || p.Conditions[0] != "<img src=y onerror=alert(2)>" {
		t.Errorf("%+v", p)
	}
	for _, w := range []string{"", "unknown", "healthy", "degraded", "fatal"} {
		if v := ParseVerdict(w); v.String() != w {
			t.Errorf("%q reads back as %q", w, v.String())
		}
	}
	if Verdict(200).String() != "unknown" {
		t.Error("a verdict outside the vocabulary must print as unknown")
	}
}
