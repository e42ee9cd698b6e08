package connector

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector/pb"
	"github.com/nichealth/nichealthd/event"
)

var _ sink.Sink = (*Sink)(nil)

// connector is a real PlatformConnector server on a unix socket. reply
// decides each call's outcome (nil: accept).
type connector struct {
	pb.UnimplementedPlatformConnectorServer

	mu       sync.Mutex
	received []*pb.HealthEvents
	calls    int
	reply    func(call int) error
	block    chan struct{} // when set, calls wait on it (or their deadline)
	discard  bool          // accept without keeping (benchmarks)

	srv  *grpc.Server
	path string
}

func (c *connector) HealthEventOccurredV1(ctx context.Context, req *pb.HealthEvents) (*emptypb.Empty, error) {
	c.mu.Lock()
	call := c.calls
	c.calls++
	block := c.block
	reply := c.reply
	c.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if reply != nil {
		if err := reply(call); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	if !c.discard {
		c.received = append(c.received, proto.Clone(req).(*pb.HealthEvents))
	}
	c.mu.Unlock()
	return &emptypb.Empty{}, nil
}

func (c *connector) got() []*pb.HealthEvents {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*pb.HealthEvents(nil), c.received...)
}

// socketDir keeps socket paths short: sun_path has 108 bytes, and test
// temp dirs named after long test names exceed it.
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nh-conn-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serve(t testing.TB, path string, c *connector) *connector {
	t.Helper()
	if c == nil {
		c = &connector{}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.path = path
	c.srv = grpc.NewServer()
	pb.RegisterPlatformConnectorServer(c.srv, c)
	go c.srv.Serve(lis)
	t.Cleanup(c.srv.Stop)
	return c
}

func newSink(t testing.TB, target string) *Sink {
	t.Helper()
	s, err := New(target, Options{NodeName: "gpu-node-7", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var stamp = event.Stamp{
	NodeName: "gpu-node-7",
	Strategy: event.StrategyStoreOnly,
	Now:      time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC),
}

func linkDowned() event.Event {
	return event.New(event.Spec{
		Kind: event.KindCounterBreach, CheckName: event.InfiniBandDegradationCheck, IsFatal: true,
		Message:   "Port mlx5_0 port 1: link_downed - Port Training State Machine failed - QP disconnect (value=1, delta=1, rate=0.20/sec)",
		ErrorCode: []string{"link_downed"}, Device: "mlx5_0", Port: 1, Card: "0000:3b:00",
		Metadata: map[string]string{"counter": "link_downed", "value": "1", "delta": "1", "rate": "0.20"},
	}, stamp)
}

func portHealthy(dev string) event.Event {
	return event.New(event.Spec{
		Kind: event.KindPortRecovered, CheckName: event.InfiniBandStateCheck, IsHealthy: true,
		Message: "Port " + dev + " port 1: healthy (ACTIVE, LinkUp)", Device: dev, Port: 1,
	}, stamp)
}

// Every one of HealthEvent's 18 fields, as the receiving connector decodes
// them (DESIGN.md section 3).
func TestConnector_3_EveryFieldDecoded(t *testing.T) {
	dir := socketDir(t)
	c := serve(t, filepath.Join(dir, "nvsentinel.sock"), nil)
	s := newSink(t, "unix://"+c.path)

	e := linkDowned()
	if err := s.Send(context.Background(), []event.Event{e}); err != nil {
		t.Fatal(err)
	}
	got := c.got()
	if len(got) != 1 || got[0].GetVersion() != 1 || len(got[0].GetEvents()) != 1 {
		t.Fatalf("connector received %v, want one HealthEvents{version:1} with one event", got)
	}
	h := got[0].GetEvents()[0]
	checks := []struct {
		field    string
		got, exp any
	}{
		{"1 version", h.GetVersion(), uint32(1)},
		{"2 agent", h.GetAgent(), "nic-health-monitor"},
		{"3 componentClass", h.GetComponentClass(), "NIC"},
		{"4 checkName", h.GetCheckName(), "InfiniBandDegradationCheck"},
		{"5 isFatal", h.GetIsFatal(), true},
		{"6 isHealthy", h.GetIsHealthy(), false},
		{"7 message", h.GetMessage(), e.Message},
		{"8 recommendedAction", h.GetRecommendedAction(), pb.RecommendedAction_REPLACE_VM},
		{"9 errorCode", strings.Join(h.GetErrorCode(), ","), "link_downed"},
		{"10 entitiesImpacted", entities(h), "NIC=mlx5_0 NICPort=1"}, // the card travels as metadata "card" (seed 11.2 entities only)
		{"11 metadata counter", h.GetMetadata()["counter"], "link_downed"},
		{"11 metadata rate", h.GetMetadata()["rate"], "0.20"},
		{"11 metadata kind", h.GetMetadata()[KindMetadataKey], "counter-breach"},
		{"11 metadata size", len(h.GetMetadata()), 6},
		{"12 generatedTimestamp", h.GetGeneratedTimestamp().AsTime(), stamp.Now},
		{"13 nodeName", h.GetNodeName(), "gpu-node-7"},
		{"14 quarantineOverrides", h.GetQuarantineOverrides() == nil, true},
		{"15 drainOverrides", h.GetDrainOverrides() == nil, true},
		{"16 processingStrategy", h.GetProcessingStrategy(), pb.ProcessingStrategy_STORE_ONLY},
		{"17 id", h.GetId(), e.ID},
		{"18 customRecommendedAction", h.GetCustomRecommendedAction(), ""},
	}
	for _, c := range checks {
		if c.got != c.exp {
			t.Errorf("field %s = %v, want %v", c.field, c.got, c.exp)
		}
	}
}

func entities(h *pb.HealthEvent) string {
	var parts []string
	for _, en := range h.GetEntitiesImpacted() {
		parts = append(parts, en.GetEntityType()+"="+en.GetEntityValue())
	}
	return strings.Join(parts, " ")
}

// One Send is one call, whatever the batch size, in outbox order.
func TestConnector_11_2_OneCallPerBatch(t *testing.T) {
	dir := socketDir(t)
	c := serve(t, filepath.Join(dir, "s.sock"), nil)
	s := newSink(t, c.path) // bare path form

	batch := []event.Event{linkDowned(), portHealthy("mlx5_1"), portHealthy("mlx5_2")}
	if err := s.Send(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	got := c.got()
	if len(got) != 1 || len(got[0].Events) != 3 {
		t.Fatalf("received %d calls, want 1 with 3 events", len(got))
	}
	for i, h := range got[0].Events {
		if h.GetId() != batch[i].ID {
			t.Errorf("event %d id %s, want %s (order kept)", i, h.GetId(), batch[i].ID)
		}
	}
	if got[0].Events[1].GetRecommendedAction() != pb.RecommendedAction_NONE || !got[0].Events[1].GetIsHealthy() {
		t.Errorf("recovery event decoded as %v", got[0].Events[1])
	}
}

func TestConnector_3_UnavailableIsTransientThenDelivered(t *testing.T) {
	dir := socketDir(t)
	const failures = 3
	c := serve(t, filepath.Join(dir, "s.sock"), &connector{reply: func(call int) error {
		if call < failures {
			return status.Error(codes.Unavailable, "starting up")
		}
		return nil
	}})
	s := newSink(t, "unix://"+c.path)
	batch := []event.Event{linkDowned()}
	for i := 0; i < failures; i++ {
		err := s.Send(context.Background(), batch)
		if err == nil || sink.IsPermanent(err) {
			t.Fatalf("attempt %d: %v, want a transient error", i, err)
		}
		if !strings.Contains(err.Error(), "Unavailable") || !strings.Contains(err.Error(), c.path) {
			t.Errorf("error %q should name the status and the socket", err)
		}
	}
	if err := s.Send(context.Background(), batch); err != nil {
		t.Fatalf("after the connector recovered: %v", err)
	}
	if got := c.got(); len(got) != 1 || got[0].Events[0].GetId() != batch[0].ID {
		t.Errorf("connector stored %v", got)
	}
}

func TestConnector_3_StatusMapping(t *testing.T) {
	tests := []struct {
		code      codes.Code
		permanent bool
	}{
		{codes.InvalidArgument, true},
		{codes.FailedPrecondition, false},
		{codes.ResourceExhausted, false},
		{codes.Internal, false},
		{codes.Unimplemented, false},
		{codes.Unavailable, false},
		{codes.DeadlineExceeded, false},
	}
	for _, tc := range tests {
		t.Run(tc.code.String(), func(t *testing.T) {
			dir := socketDir(t)
			c := serve(t, filepath.Join(dir, "s.sock"), &connector{reply: func(int) error {
				return status.Error(tc.code, "nope")
			}})
			s := newSink(t, "unix://"+c.path)
			err := s.Send(context.Background(), []event.Event{linkDowned()})
			if err == nil {
				t.Fatal("Send returned nil")
			}
			if sink.IsPermanent(err) != tc.permanent {
				t.Errorf("%s: permanent = %v, want %v (%v)", tc.code, sink.IsPermanent(err), tc.permanent, err)
			}
		})
	}
}

// The connector may start after the daemon: New succeeds, Send fails
// transiently while the socket is missing, and the first Send after the
// socket appears delivers.
func TestConnector_3_SocketAppearsLater(t *testing.T) {
	dir := socketDir(t)
	path := filepath.Join(dir, "late.sock")
	s := newSink(t, "unix://"+path)
	batch := []event.Event{portHealthy("mlx5_0")}
	for i := 0; i < 2; i++ {
		err := s.Send(context.Background(), batch)
		if err == nil || sink.IsPermanent(err) {
			t.Fatalf("attempt %d with no socket: %v, want transient", i, err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q should name the socket", err)
		}
	}
	c := serve(t, path, nil)
	if err := s.Send(context.Background(), batch); err != nil {
		t.Fatalf("socket is there now: %v", err)
	}
	if len(c.got()) != 1 {
		t.Errorf("connector got %d calls", len(c.got()))
	}
}

// A connector restart: the old server goes away, calls fail transiently,
// a new server on the same path gets the next batch.
func TestConnector_3_ReconnectAfterRestart(t *testing.T) {
	dir := socketDir(t)
	path := filepath.Join(dir, "s.sock")
	c1 := serve(t, path, nil)
	s := newSink(t, path)
	if err := s.Send(context.Background(), []event.Event{linkDowned()}); err != nil {
		t.Fatal(err)
	}
	c1.srv.Stop()
	os.Remove(path)
	if err := s.Send(context.Background(), []event.Event{linkDowned()}); err == nil || sink.IsPermanent(err) {
		t.Fatalf("connector down: %v, want transient", err)
	}
	c2 := serve(t, path, nil)
	if err := s.Send(context.Background(), []event.Event{portHealthy("mlx5_0")}); err != nil {
		t.Fatalf("connector back: %v", err)
	}
	if len(c1.got()) != 1 || len(c2.got()) != 1 {
		t.Errorf("calls: first server %d, second %d; want 1 and 1", len(c1.got()), len(c2.got()))
	}
}

// A connector that accepts the connection but never answers must not hold
// the drainer: the per-call timeout ends the call, transiently.
func TestConnector_3_HungConnectorTimesOut(t *testing.T) {
	dir := socketDir(t)
	block := make(chan struct{})
	defer close(block)
	c := serve(t, filepath.Join(dir, "s.sock"), &connector{block: block})
	s, err := New(c.path, Options{NodeName: "n", Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Send(context.Background(), []event.Event{linkDowned()})
	if err == nil || sink.IsPermanent(err) || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Fatalf("hung connector: %v, want a transient DeadlineExceeded", err)
	}
}

func TestConnector_3_CancelledContextIsTransient(t *testing.T) {
	dir := socketDir(t)
	c := serve(t, filepath.Join(dir, "s.sock"), nil)
	s := newSink(t, c.path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Send(ctx, []event.Event{linkDowned()})
	if err == nil || sink.IsPermanent(err) {
		t.Fatalf("cancelled: %v, want transient", err)
	}
}

func TestConnector_3_SendAfterClose(t *testing.T) {
	s := newSink(t, "/nonexistent/s.sock")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), []event.Event{linkDowned()}); err == nil {
		t.Error("Send after Close returned nil")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestConnector_3_NewValidates(t *testing.T) {
	wd, _ := os.Getwd()
	tests := []struct {
		target, node string
		want         string // Target(), or "" for an error
		errHas       string
	}{
		{"unix:///run/nvsentinel/nvsentinel.sock", "n", "unix:///run/nvsentinel/nvsentinel.sock", ""},
		{"/run/nvsentinel.sock", "n", "unix:///run/nvsentinel.sock", ""},
		{"unix:/run/x.sock", "n", "unix:///run/x.sock", ""},
		{"unix:rel.sock", "n", "unix://" + filepath.Join(wd, "rel.sock"), ""},
		{"rel/dir.sock", "n", "unix://" + filepath.Join(wd, "rel/dir.sock"), ""},
		{" unix:///a/b.sock ", "n", "unix:///a/b.sock", ""},
		{"unix:///run/a%20b.sock", "n", "unix:///run/a%20b.sock", ""},
		{"/run/odd #?.sock", "n", "unix:///run/odd%20%23%3F.sock", ""},
		{"/run/a\x00b", "n", "", "NUL"},
		{"", "n", "", "empty"},
		{"unix://", "n", "", "absolute path"},
		{"unix://rel.sock", "n", "", "absolute path"},
		{"unix:", "n", "", "no socket path"},
		{"dns:///connector:50051", "n", "", "only unix sockets"},
		{"tcp://10.0.0.1:50051", "n", "", "only unix sockets"},
		{"localhost:50051", "n", "", "only unix sockets"},
		{"unix-abstract:nvsentinel", "n", "", "only unix sockets"},
		{DefaultTarget, "", "", "node name is empty"},
		{DefaultTarget, "  ", "", "--node-name"},
	}
	for _, tc := range tests {
		s, err := New(tc.target, Options{NodeName: tc.node})
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("New(%q, %q) = %v, want an error containing %q", tc.target, tc.node, err, tc.errHas)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%q): %v", tc.target, err)
			continue
		}
		if s.Target() != tc.want {
			t.Errorf("New(%q).Target() = %q, want %q", tc.target, s.Target(), tc.want)
		}
		if s.timeout != DefaultTimeout || s.Name() != "platform-connector" {
			t.Errorf("defaults: timeout %v name %q", s.timeout, s.Name())
		}
	}
}

func TestConnector_3_InvalidUTF8DoesNotPoisonTheBatch(t *testing.T) {
	dir := socketDir(t)
	c := serve(t, filepath.Join(dir, "s.sock"), nil)
	s := newSink(t, c.path)
	e := linkDowned()
	e.Message = "Port mlx5_0 port 1: rate \xff\xfe Gb/sec"
	e.Metadata["raw\xff"] = "N/A \xc3"
	if err := s.Send(context.Background(), []event.Event{e}); err != nil {
		t.Fatalf("odd bytes from sysfs made the batch undeliverable: %v", err)
	}
	h := c.got()[0].Events[0]
	if h.GetMessage() != "Port mlx5_0 port 1: rate \uFFFD Gb/sec" || h.GetMetadata()["raw\uFFFD"] != "N/A \uFFFD" {
		t.Errorf("got message %q metadata %q", h.GetMessage(), h.GetMetadata())
	}
}

func TestConnector_3_NodeNameFallback(t *testing.T) {
	e := portHealthy("mlx5_0")
	e.NodeName = ""
	e.Version = 0
	e.Kind = ""
	e.Metadata = nil
	e.GeneratedTimestamp = time.Time{}
	h := ToProto(&e, "fallback-node")
	if h.GetNodeName() != "fallback-node" || h.GetVersion() != 1 || h.GetMetadata() != nil || h.GetGeneratedTimestamp() != nil {
		t.Errorf("ToProto = %v", h)
	}
	e.NodeName = "stamped"
	if ToProto(&e, "fallback-node").GetNodeName() != "stamped" {
		t.Error("the node name an event was stamped with must win")
	}
}

func TestConnector_3_EnumsMatchTheEventModel(t *testing.T) {
	for _, a := range []event.RecommendedAction{event.ActionNone, event.ActionComponentReset, event.ActionContactSupport,
		event.ActionRunFieldDiag, event.ActionRestartVM, event.ActionRestartBM, event.ActionReplaceVM,
		event.ActionRunDCGMEUD, event.ActionCustom, event.ActionUnknown} {
		if got := pb.RecommendedAction(a).String(); got != a.String() {
			t.Errorf("RecommendedAction %d: wire name %s, event name %s", a, got, a.String())
		}
	}
	for _, p := range []event.ProcessingStrategy{event.StrategyUnspecified, event.StrategyExecuteRemediation,
		event.StrategyStoreOnly, event.StrategyStoreAndAnalyse} {
		if got := pb.ProcessingStrategy(p).String(); got != p.String() {
			t.Errorf("ProcessingStrategy %d: wire name %s, event name %s", p, got, p.String())
		}
	}
}

func BenchmarkSend_16Events(b *testing.B) {
	dir := socketDir(b)
	c := serve(b, filepath.Join(dir, "s.sock"), &connector{discard: true})
	s := newSink(b, c.path)
	batch := make([]event.Event, 16)
	for i := range batch {
		batch[i] = linkDowned()
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Send(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// Socket paths with characters that mean something in a URL still reach
// the right socket (gRPC parses its target as a URL).
func TestConnector_3_OddSocketPath(t *testing.T) {
	dir := socketDir(t)
	c := serve(t, filepath.Join(dir, "a b#1%.sock"), nil)
	s := newSink(t, c.path)
	if err := s.Send(context.Background(), []event.Event{portHealthy("mlx5_0")}); err != nil {
		t.Fatal(err)
	}
	if len(c.got()) != 1 {
		t.Errorf("connector got %d calls", len(c.got()))
	}
}

// Issue 22 row 8: a batch above the connector's message size limit was
// answered ResourceExhausted and retried whole for ever. The sink says
// "too large" (send smaller batches), and for one event alone that can
// never fit, "too large" and permanent (park it).
func TestBounded_8_ResourceExhaustedIsTooLarge(t *testing.T) {
	path := filepath.Join(socketDir(t), "c.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := &connector{path: path}
	c.srv = grpc.NewServer(grpc.MaxRecvMsgSize(2 << 10))
	pb.RegisterPlatformConnectorServer(c.srv, c)
	go c.srv.Serve(lis)
	t.Cleanup(c.srv.Stop)
	s := newSink(t, "unix://"+path)
	mk := func(msg string) event.Event {
		return event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: true, Message: msg, Device: "mlx5_0", Port: 1},
			event.Stamp{NodeName: "n", Now: time.Now()})
	}
	var batch []event.Event
	for i := 0; i < 20; i++ {
		batch = append(batch, mk("Port mlx5_0 port 1: state DOWN, phys_state Disabled"))
	}
	err = s.Send(context.Background(), batch)
	if !sink.IsTooLarge(err) || sink.IsPermanent(err) {
		t.Fatalf("batch above the limit: %v (too large %v, permanent %v)", err, sink.IsTooLarge(err), sink.IsPermanent(err))
	}
	if err := s.Send(context.Background(), batch[:2]); err != nil {
		t.Fatalf("a smaller batch: %v", err)
	}
	err = s.Send(context.Background(), []event.Event{mk(strings.Repeat("x", 3000))})
	if !sink.IsTooLarge(err) || !sink.IsPermanent(err) {
		t.Fatalf("one event above the limit: %v (too large %v, permanent %v)", err, sink.IsTooLarge(err), sink.IsPermanent(err))
	}
}
