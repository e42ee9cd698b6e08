package overlay

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/internal/promlab"
)

const (
	spineGUID = "0x0002c90300000001"
	leafGUID  = "0x0002c90300000011"
)

// Two daemons with different shares, scraped by a real Prometheus: node-a
// reads spine-01 ports 1 and 2 (port 2's symbol errors rise), node-b
// reads leaf-01 ports 1 and 3 (port 3's reads stopped an hour ago). The
// overlay joins what each says under the switch port's GUID and number.
func TestFabric_14_SwitchPortsFromRealPrometheus(t *testing.T) {
	t.Parallel()
	a := promlab.FabricDaemon(t, true, []promlab.FabricPort{
		{SwitchGUID: spineGUID, SwitchName: "spine-01", Port: 1},
		{SwitchGUID: spineGUID, SwitchName: "spine-01", Port: 2, SymbolErrorsPerScrape: 50},
	})
	b := promlab.FabricDaemon(t, true, []promlab.FabricPort{
		{SwitchGUID: leafGUID, SwitchName: `leaf-01 <img src=x onerror=alert(1)>`, Port: 1},
		{SwitchGUID: leafGUID, SwitchName: `leaf-01 <img src=x onerror=alert(1)>`, Port: 3, LastReadAge: time.Hour},
	})
	prom := promlab.Start(t, nil,
		promlab.Target{Addr: a, Labels: map[string]string{"instance": "node-a"}},
		promlab.Target{Addr: b, Labels: map[string]string{"instance": "node-b"}})
	// Two scrapes of the erroring port: its increase is on record.
	prom.Wait(t, `increase(nichealth_fabric_port_counter{counter="SymbolErrorCounter",port="2"}[1m]) > 0`)
	prom.Wait(t, `nichealth_fabric_port_last_read_timestamp_seconds{instance="node-b",port="1"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := FromPrometheus(ctx, &http.Client{}, prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Switches) != 4 {
		t.Fatalf("switch ports %+v", o.Switches)
	}
	sw := func(guid string, port int) *SwitchPort {
		g, err := ibnet.ParseGUID(guid)
		if err != nil {
			t.Fatal(err)
		}
		p := o.Switch(g, port)
		if p == nil {
			t.Fatalf("%s port %d: not in the overlay", guid, port)
		}
		return p
	}
	erroring := sw(spineGUID, 2)
	if erroring.Verdict != Degraded || erroring.Unread || !slices.Equal(erroring.Readers, []string{"node-a"}) ||
		len(erroring.Conditions) != 1 || !strings.HasPrefix(erroring.Conditions[0], "SymbolErrorCounter +") ||
		!strings.HasSuffix(erroring.Conditions[0], " in 15m (read by node-a)") {
		t.Errorf("erroring spine port: %+v", erroring)
	}
	for _, p := range []*SwitchPort{sw(spineGUID, 1), sw(leafGUID, 1)} {
		if p.Verdict != Healthy || p.Unread || len(p.Readers) != 1 || len(p.Conditions) != 0 {
			t.Errorf("clean port: %+v", p)
		}
	}
	if p := sw(leafGUID, 1); p.Readers[0] != "node-b" || p.SwitchName != `leaf-01 <img src=x onerror=alert(1)>` {
		t.Errorf("leaf port 1: %+v (the name is data, kept as said)", p)
	}
	unread := sw(leafGUID, 3)
	if !unread.Unread || unread.Verdict != NotReported || len(unread.Conditions) != 1 ||
		!strings.HasPrefix(unread.Conditions[0], "read by no node: last read 1h0m") || !strings.HasSuffix(unread.Conditions[0], " ago by node-b") {
		t.Errorf("unread leaf port: %+v", unread)
	}
	if o.Switch(0x2c90300000001, 3) != nil {
		t.Error("spine port 3 is in nobody's share")
	}
}

// The fabric queries the map runs are the shipped rule's: the unread
// expression equals NICFabricPortUnread's (checked against the file in
// packaging/prometheus), and the error query names every link error field.
func TestFabric_14_QueriesAsDocumented(t *testing.T) {
	if !strings.Contains(FabricQueries.Errors, `[15m]) > 0`) || !strings.HasPrefix(FabricQueries.Errors, "increase(nichealth_fabric_port_counter{") {
		t.Errorf("errors query %s", FabricQueries.Errors)
	}
	for _, f := range []string{"SymbolErrorCounter", "LinkDownedCounter", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors"} {
		if !strings.Contains(FabricQueries.Errors, f) {
			t.Errorf("errors query lacks %s", f)
		}
	}
	if strings.Contains(FabricQueries.Errors, "PortXmitWait") || strings.Contains(FabricQueries.Errors, "PortXmitData") {
		t.Errorf("errors query counts traffic: %s", FabricQueries.Errors)
	}
}
