package main

// End-to-end tests of the platform connector sink (DESIGN.md section 3):
// the built daemon sends to a real gRPC server on a unix socket that
// implements NVSentinel's PlatformConnector service, through outages,
// transient and permanent refusals, and a SIGKILL of the daemon.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/daemon/sink/connector/pb"
	"github.com/nichealth/nichealthd/event"
)

// platformConnector is a test PlatformConnector: it records every event it
// accepts, in arrival order, and answers each call with what refuse says.
type platformConnector struct {
	pb.UnimplementedPlatformConnectorServer

	mu       sync.Mutex
	calls    int
	accepted []*pb.HealthEvent
	refused  []*pb.HealthEvent
	// refuse decides the answer to call number n (1-based); nil accepts.
	refuse func(n int, req *pb.HealthEvents) error

	srv *grpc.Server
}

func (p *platformConnector) HealthEventOccurredV1(_ context.Context, req *pb.HealthEvents) (*emptypb.Empty, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.refuse != nil {
		if err := p.refuse(p.calls, req); err != nil {
			p.refused = append(p.refused, req.GetEvents()...)
			return nil, err
		}
	}
	if req.GetVersion() != 1 {
		return nil, status.Errorf(codes.InvalidArgument, "HealthEvents.version %d", req.GetVersion())
	}
	p.accepted = append(p.accepted, req.GetEvents()...)
	return &emptypb.Empty{}, nil
}

func (p *platformConnector) setRefuse(f func(n int, req *pb.HealthEvents) error) {
	p.mu.Lock()
	p.refuse = f
	p.mu.Unlock()
}

func (p *platformConnector) snapshot() (calls int, accepted, refused []*pb.HealthEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, slices.Clone(p.accepted), slices.Clone(p.refused)
}

// connectorSocket is a socket path short enough for sun_path (108 bytes),
// which a t.TempDir() named after a long test may not be.
func connectorSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nhc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "nvsentinel.sock")
}

func startConnector(t *testing.T, path string, pc *platformConnector) *platformConnector {
	t.Helper()
	if pc == nil {
		pc = &platformConnector{}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	pc.srv = grpc.NewServer()
	pb.RegisterPlatformConnectorServer(pc.srv, pc)
	go pc.srv.Serve(l)
	t.Cleanup(pc.srv.Stop)
	return pc
}

// waitDelivered waits until every id has been accepted at least once.
func (p *platformConnector) waitDelivered(n *node, ids []string) []*pb.HealthEvent {
	n.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, acc, _ := p.snapshot()
		got := map[string]bool{}
		for _, e := range acc {
			got[e.GetId()] = true
		}
		var missing []string
		for _, id := range ids {
			if !got[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return acc
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("connector never received %d of %d events (first missing %s); received %d\nstderr:\n%s",
				len(missing), len(ids), missing[0], len(acc), n.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ids(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// firstSeen keeps the first copy of each id, in arrival order: delivery is
// at least once, and a receiver drops repeats by id.
func firstSeen(evs []*pb.HealthEvent) []*pb.HealthEvent {
	seen := map[string]bool{}
	var out []*pb.HealthEvent
	for _, e := range evs {
		if !seen[e.GetId()] {
			seen[e.GetId()] = true
			out = append(out, e)
		}
	}
	return out
}

func pbDevice(e *pb.HealthEvent) string {
	for _, en := range e.GetEntitiesImpacted() {
		if en.GetEntityType() == "NIC" {
			return en.GetEntityValue()
		}
	}
	return ""
}

// togglePorts takes each port down and up again, waiting for each event in
// the JSON-lines file so that every transition is observed.
func togglePorts(n *node, devs ...string) {
	n.t.Helper()
	for _, dev := range devs {
		before := len(n.read())
		if err := n.h.SetPortState(dev, 1, "DOWN", "Disabled"); err != nil {
			n.t.Fatal(err)
		}
		n.waitEventAfter(before, "fatal "+dev, portEvent(dev, event.KindPortFatal))
		if err := n.h.SetPortState(dev, 1, "ACTIVE", "LinkUp"); err != nil {
			n.t.Fatal(err)
		}
		n.waitEventAfter(before, "recovery "+dev, portEvent(dev, event.KindPortRecovered))
	}
}

// TestIntegration_Connector_EveryFieldDecoded: the event the connector
// decodes is the event of the JSON-lines file, field for field, with
// REPLACE_VM for a fatal port.
func TestIntegration_Connector_EveryFieldDecoded(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	pc := startConnector(t, sock, nil)
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "200ms"})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	want := n.waitEvent("fatal mlx5_3", portEvent("mlx5_3", event.KindPortFatal))
	acc := pc.waitDelivered(n, []string{want.ID})
	var got *pb.HealthEvent
	for _, e := range acc {
		if e.GetId() == want.ID {
			got = e
		}
	}
	ents := make([]event.Entity, 0, len(got.GetEntitiesImpacted()))
	for _, en := range got.GetEntitiesImpacted() {
		ents = append(ents, event.Entity{Type: en.GetEntityType(), Value: en.GetEntityValue()})
	}
	for _, c := range []struct {
		field string
		ok    bool
	}{
		{"version", got.GetVersion() == want.Version && got.GetVersion() == 1},
		{"agent", got.GetAgent() == "nic-health-monitor"},
		{"componentClass", got.GetComponentClass() == "NIC"},
		{"checkName", got.GetCheckName() == event.InfiniBandStateCheck},
		{"isFatal", got.GetIsFatal()},
		{"isHealthy", !got.GetIsHealthy()},
		{"message", got.GetMessage() == want.Message && got.GetMessage() == "Port mlx5_3 port 1: state DOWN, phys_state Disabled"},
		{"recommendedAction", got.GetRecommendedAction() == pb.RecommendedAction_REPLACE_VM},
		{"errorCode", slices.Equal(got.GetErrorCode(), want.ErrorCode)},
		{"entitiesImpacted", slices.Equal(ents, []event.Entity{{Type: "NIC", Value: "mlx5_3"}, {Type: "NICPort", Value: "1"}})},
		{"metadata", got.GetMetadata()[connector.KindMetadataKey] == string(event.KindPortFatal) && got.GetMetadata()["state"] == "DOWN"},
		{"generatedTimestamp", got.GetGeneratedTimestamp().AsTime().Equal(want.GeneratedTimestamp)},
		{"nodeName", got.GetNodeName() == "bb-node"},
		{"processingStrategy", got.GetProcessingStrategy() == pb.ProcessingStrategy_EXECUTE_REMEDIATION},
		{"id", got.GetId() == want.ID && want.ID != ""},
		{"overrides unset", got.GetQuarantineOverrides() == nil && got.GetDrainOverrides() == nil && got.GetCustomRecommendedAction() == ""},
	} {
		if !c.ok {
			t.Errorf("field %s: got %v\nJSON-lines event %+v", c.field, got, want)
		}
	}
	n.stop()
	// Everything the file has, the connector has (the same outbox feeds both).
	pc.waitDelivered(n, ids(n.read()))
}

// TestIntegration_Connector_OutageDeliversEverythingInOrder: the connector
// is not there (no socket) while ports flap; when it starts, every event
// arrives, none lost, in the file's order for each device.
func TestIntegration_Connector_OutageDeliversEverythingInOrder(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "200ms"})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	togglePorts(n, "mlx5_1", "mlx5_2", "mlx5_4")
	n.waitLog("the outage reported", func(l string) bool { return strings.Contains(l, "sink unavailable") })

	pc := startConnector(t, sock, nil)
	want := n.read()
	acc := firstSeen(pc.waitDelivered(n, ids(want)))
	perDev := func(dev string, idsOf func(int) (string, string), k int) []string {
		var out []string
		for i := 0; i < k; i++ {
			if d, id := idsOf(i); d == dev {
				out = append(out, id)
			}
		}
		return out
	}
	for _, dev := range []string{"", "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4", "mlx5_9"} {
		w := perDev(dev, func(i int) (string, string) { return want[i].Device(), want[i].ID }, len(want))
		g := perDev(dev, func(i int) (string, string) { return pbDevice(acc[i]), acc[i].GetId() }, len(acc))
		// acc may hold events emitted after want was read; compare the prefix.
		if len(g) < len(w) || !slices.Equal(g[:len(w)], w) {
			t.Fatalf("device %q: connector order differs from the JSON-lines file\n got %v\nwant %v", dev, g, w)
		}
	}
	if c := count(want, func(e event.Event) bool { return e.Kind == event.KindPortFatal || e.Kind == event.KindPortRecovered }); c != 6 {
		t.Fatalf("%d port transitions in the file, want 6: %s", c, summary(want))
	}
	n.stop()
}

// TestIntegration_Connector_UnavailableThenOK: Unavailable is transient;
// the events are retried until the connector takes them.
func TestIntegration_Connector_UnavailableThenOK(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	pc := startConnector(t, sock, &platformConnector{
		refuse: func(int, *pb.HealthEvents) error {
			return status.Error(codes.Unavailable, "connector starting up")
		},
	})
	n := newNode(t, "minimal", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "200ms"})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	fatal := n.waitEvent("fatal", portEvent("mlx5_0", event.KindPortFatal))
	// Let a few calls fail, including one that carries the fault.
	deadline := time.Now().Add(waitDeadline)
	for {
		_, _, ref := pc.snapshot()
		if slices.ContainsFunc(ref, func(e *pb.HealthEvent) bool { return e.GetId() == fatal.ID }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fault was never offered to the connector\n%s", n.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if calls, acc, _ := pc.snapshot(); len(acc) != 0 || calls < 2 {
		t.Fatalf("calls %d accepted %d while refusing", calls, len(acc))
	}
	pc.setRefuse(nil)
	pc.waitDelivered(n, ids(n.read()))
	if !strings.Contains(n.stderr.String(), "Unavailable") {
		t.Fatalf("the refusal was not logged:\n%s", n.stderr.Tail())
	}
	n.stop()
}

// TestIntegration_Connector_InvalidArgumentMovesPast: a batch the connector
// will never accept is logged and skipped, so later events still flow.
func TestIntegration_Connector_InvalidArgumentMovesPast(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	var rejectedID string
	var once sync.Once
	pc := startConnector(t, sock, &platformConnector{})
	var mu sync.Mutex
	// The server rejects the first fatal mlx5_3 event, and that event
	// every time it is offered again (alone or in a batch): it is invalid.
	pc.setRefuse(func(_ int, req *pb.HealthEvents) error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range req.GetEvents() {
			if pbDevice(e) == "mlx5_3" && e.GetIsFatal() {
				once.Do(func() { rejectedID = e.GetId() })
			}
			if e.GetId() == rejectedID {
				return status.Error(codes.InvalidArgument, "entity NIC mlx5_3 not known to this platform")
			}
		}
		return nil
	})
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "200ms"})
	n.start()
	base := n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	pc.waitDelivered(n, []string{base.ID})
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	bad := n.waitEvent("fatal mlx5_3", portEvent("mlx5_3", event.KindPortFatal))
	n.waitLog("the permanent refusal", func(l string) bool {
		return strings.Contains(l, "rejected event as invalid") && strings.Contains(l, bad.ID)
	})
	if err := n.h.SetPortState("mlx5_4", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	later := n.waitEvent("fatal mlx5_4", portEvent("mlx5_4", event.KindPortFatal))
	pc.waitDelivered(n, []string{later.ID})
	n.stop()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if rejectedID != bad.ID {
		t.Fatalf("rejected %q, want the mlx5_3 fault %q", rejectedID, bad.ID)
	}
	for _, e := range pc.accepted {
		if e.GetId() == bad.ID {
			t.Fatal("the permanently refused event was sent again")
		}
	}
}

// TestIntegration_Connector_SIGKILLWhileUndelivered: events pending for a
// connector that is down survive a SIGKILL of the daemon and are delivered
// at least once after the restart.
func TestIntegration_Connector_SIGKILLWhileUndelivered(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "200ms"})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	togglePorts(n, "mlx5_5", "mlx5_6")
	if err := n.h.SetPortState("mlx5_7", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("fatal mlx5_7", portEvent("mlx5_7", event.KindPortFatal))
	before := n.read()
	n.kill()

	n.start()
	n.waitReadyLog()
	pc := startConnector(t, sock, nil)
	acc := pc.waitDelivered(n, ids(before))
	if len(firstSeen(acc)) < len(before) {
		t.Fatalf("received %d distinct events, want at least %d", len(firstSeen(acc)), len(before))
	}
	n.stop()
}
