package overlay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// maxResponse bounds one query's answer: a 4,000-node fleet's
// nichealth_port_info is about 50,000 series, a few MB of JSON.
const maxResponse = 256 << 20

// Queries are the instant queries FromPrometheus runs, in order. The
// first names every port with its GUIDs; the others are joined to it by
// (instance, device, port).
var Queries = struct {
	Info, Verdict, State, Breached, Alerts, Cable string
}{
	Info:     `nichealth_port_info`,
	Verdict:  `nichealth_port_verdict`,
	State:    `nichealth_port_state_info`,
	Breached: `nichealth_hwcounter_breached == 1`,
	Alerts:   `ALERTS{alertstate="firing",device!="",port!=""}`,
	Cable:    `nichealth_cable_verdict{direction!="none"}`,
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value() float64 {
	str, _ := s.Value[1].(string)
	v, _ := strconv.ParseFloat(str, 64)
	return v
}

type seriesKey struct{ instance, device, port string }

func keyOf(m map[string]string) seriesKey { return seriesKey{m["instance"], m["device"], m["port"]} }

// FromPrometheus asks a Prometheus server (base URL, e.g.
// http://prometheus:9090) for every port nichealthd exports, and for the
// switch ports the daemons read in their fabric shares (FabricQueries). The context
// bounds the whole exchange. It fails when the server cannot be asked or
// answers an error; a fleet with no nichealth_port_info (daemons older
// than the GUID export) gives an empty overlay and no error.
func FromPrometheus(ctx context.Context, client *http.Client, base string) (*Overlay, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http://host:port", base)
	}
	q := func(expr string) ([]sample, error) { return query(ctx, client, u, expr) }
	info, err := q(Queries.Info)
	if err != nil {
		return nil, err
	}
	o := newOverlay("prometheus " + u.Redacted())
	ports := map[seriesKey]*Port{}
	for _, s := range info {
		n, _ := ibnet.ParseGUID(s.Metric["node_guid"])
		pg, _ := ibnet.ParseGUID(s.Metric["port_guid"])
		num, _ := strconv.Atoi(s.Metric["port"])
		ports[keyOf(s.Metric)] = &Port{Node: s.Metric["instance"], Device: s.Metric["device"], Port: num, NodeGUID: n, PortGUID: pg}
	}
	verdicts, err := q(Queries.Verdict)
	if err != nil {
		return nil, err
	}
	for _, s := range verdicts {
		if p := ports[keyOf(s.Metric)]; p != nil {
			switch s.value() {
			case 0:
				p.Verdict = Worse(p.Verdict, Healthy)
			case 1:
				p.Verdict = Worse(p.Verdict, Degraded)
			case 2:
				p.Verdict = Worse(p.Verdict, Fatal)
			}
		}
	}
	states, err := q(Queries.State)
	if err != nil {
		return nil, err
	}
	for _, s := range states {
		if p := ports[keyOf(s.Metric)]; p != nil {
			p.State = strings.TrimSpace(s.Metric["state"] + "/" + s.Metric["phys_state"])
		}
	}
	breached, err := q(Queries.Breached)
	if err != nil {
		return nil, err
	}
	for _, s := range breached {
		if p := ports[keyOf(s.Metric)]; p != nil {
			p.Conditions = append(p.Conditions, "latched breach: "+s.Metric["counter"])
		}
	}
	// Alerts are an extra: a Prometheus without the shipped rules has
	// none, and that is no reason to draw nothing.
	if alerts, err := q(Queries.Alerts); err == nil {
		for _, s := range alerts {
			if p := ports[keyOf(s.Metric)]; p != nil {
				p.Conditions = append(p.Conditions, "alert "+s.Metric["alertname"]+" firing")
			}
		}
	}
	// The cable verdicts are an extra too: daemons older than the verdict
	// export none.
	if cables, err := q(Queries.Cable); err == nil {
		for _, s := range cables {
			if p := ports[keyOf(s.Metric)]; p != nil {
				if d := cableDirection(s.Metric["direction"]); d != "" {
					p.Cable = d
					p.Conditions = append(p.Conditions, cableCondition(d, s.Metric["suspect"]))
				}
			}
		}
	}
	if err := o.fromFabric(q); err != nil {
		return nil, err
	}
	for _, p := range ports {
		if p.Verdict != Healthy && p.State != "" {
			p.Conditions = append(p.Conditions, "state "+p.State)
		}
		o.add(p)
	}
	o.sort()
	return o, nil
}

// fromFabric asks for the switch ports the daemons read. The fabric's
// alerts are an extra, as the node ports' are.
func (o *Overlay) fromFabric(q func(string) ([]sample, error)) error {
	reads, err := q(FabricQueries.Reads)
	if err != nil {
		return err
	}
	errs, err := q(FabricQueries.Errors)
	if err != nil {
		return err
	}
	unread, err := q(FabricQueries.Unread)
	if err != nil {
		return err
	}
	alerts, err := q(FabricQueries.Alerts)
	if err != nil {
		alerts = nil
	}
	o.addFabric(reads, errs, unread, alerts)
	return nil
}

func query(ctx context.Context, client *http.Client, base *url.URL, expr string) ([]sample, error) {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/query"
	u.RawQuery = url.Values{"query": {expr}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("query %s: read the answer: %w", expr, err)
	}
	if len(body) > maxResponse {
		return nil, fmt.Errorf("query %s: answer larger than %d MiB", expr, maxResponse>>20)
	}
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %s: HTTP %d, not a Prometheus API answer: %w", expr, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s: %s", expr, r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %q, want vector", expr, r.Data.ResultType)
	}
	return r.Data.Result, nil
}
