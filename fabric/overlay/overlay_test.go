package overlay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFabric_12_StatusDumps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a017.json", `{"nodeName":"gpu-a017","ports":[
		{"device":"mlx5_0","port":1,"nodeGUID":"0xb83fd20300a0b010","portGUID":"0xb83fd20300a0b010","verdict":"healthy","state":"ACTIVE","physState":"LinkUp","conditions":[]},
		{"device":"mlx5_3","port":1,"nodeGUID":"0xb83fd20300a0b040","portGUID":"","verdict":"fatal","state":"DOWN","physState":"Disabled",
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
	if p == nil || p.Verdict != Fatal || p.State != "DOWN/Disabled" || len(p.Conditions) != 1 || p.Device != "mlx5_3" {
		t.Errorf("mlx5_3: %+v", p)
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
	if Worse("", Healthy) != Healthy || Worse(Fatal, "") != Fatal {
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
