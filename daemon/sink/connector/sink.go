package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector/pb"
	"github.com/nichealth/nichealthd/event"
)

// DefaultTarget is where NVSentinel's platform connector listens.
const DefaultTarget = "unix:///run/nvsentinel/nvsentinel.sock"

// DefaultTimeout bounds one HealthEventOccurredV1 call.
const DefaultTimeout = 5 * time.Second

// MaxBatch is the most events the drainer should hand to one Send.
const MaxBatch = 256

// Options configure a Sink.
type Options struct {
	// NodeName is stamped on events that carry none. Required: NVSentinel
	// keys node conditions on it and drops events without one.
	NodeName string
	// Logger receives connection resets at debug level; nil discards.
	Logger *slog.Logger
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Sink sends events to the platform connector. It implements sink.Sink.
type Sink struct {
	target  string // unix:///abs/path
	path    string
	node    string
	timeout time.Duration
	logger  *slog.Logger

	mu     sync.Mutex
	conn   *grpc.ClientConn
	client pb.PlatformConnectorClient
	closed bool
}

// New validates the target and options; it does not connect. A socket that
// does not exist yet is fine: the connector may start after the daemon, and
// until it does Send returns transient errors and the outbox holds events.
//
// target is "unix:///path", "unix:/path" or a bare path (made absolute);
// other schemes are refused, because the connector is a local socket and a
// TCP target would send node health off the box unencrypted.
func New(target string, opts Options) (*Sink, error) {
	path, err := socketPath(target)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.NodeName) == "" {
		return nil, errors.New("platform connector sink: node name is empty; set --node-name or the NODE_NAME environment variable (NVSentinel requires it on every event)")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{
		target: (&url.URL{Scheme: "unix", Path: path}).String(), path: path, node: opts.NodeName,
		timeout: opts.Timeout, logger: opts.Logger,
	}, nil
}

// hostPort catches "localhost:50051", which would otherwise be taken for a
// relative socket path.
var hostPort = regexp.MustCompile(`^[^/]*:[0-9]+$`)

func socketPath(target string) (string, error) {
	t := strings.TrimSpace(target)
	var p string
	switch {
	case t == "":
		return "", fmt.Errorf("platform connector target is empty; use %s or an absolute socket path", DefaultTarget)
	case strings.HasPrefix(t, "unix://"):
		// A URL: gRPC percent-decodes its path, and so do we.
		u, err := url.Parse(t)
		if err != nil || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return "", fmt.Errorf("platform connector target %q: unix:// needs an absolute path, e.g. %s", target, DefaultTarget)
		}
		p = u.Path
	case strings.HasPrefix(t, "unix:"):
		p = strings.TrimPrefix(t, "unix:")
	case strings.Contains(t, "://") || strings.HasPrefix(t, "unix-abstract:") || strings.HasPrefix(t, "dns:") || hostPort.MatchString(t):
		return "", fmt.Errorf("platform connector target %q: only unix sockets are supported, e.g. %s", target, DefaultTarget)
	default:
		p = t
	}
	if p == "" {
		return "", fmt.Errorf("platform connector target %q has no socket path; use e.g. %s", target, DefaultTarget)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("platform connector target %q: the socket path contains a NUL byte", target)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("platform connector target %q: %w", target, err)
	}
	return abs, nil
}

// Name implements sink.Sink.
func (s *Sink) Name() string { return "platform-connector" }

// Target is the gRPC target in use, "unix:///abs/path" (percent-encoded).
func (s *Sink) Target() string { return s.target }

// Send makes one HealthEventOccurredV1 call carrying every event (after
// ToProto) in HealthEvents{version: 1}. Outcomes (sink.Sink):
//
//	nil              - the connector accepted the batch; an empty batch
//	                   sends nothing and returns nil;
//	Permanent(err)   - the connector answered InvalidArgument: it will
//	                   refuse these bytes every time;
//	TooLarge(err)    - ResourceExhausted: the call is above a message
//	                   size limit (gRPC's 4 MiB by default) or the
//	                   connector sheds load; smaller batches help either
//	                   way. One event above the size limit alone is also
//	                   Permanent: it will never fit;
//	other error      - transient: socket missing, connection refused,
//	                   Unavailable, deadline exceeded, ctx cancelled, and
//	                   any other status (FailedPrecondition included: the
//	                   connector may be starting, and dropping events on
//	                   a guess would lose them).
//
// After a transient failure the connection is discarded, so the next Send
// dials afresh instead of waiting out gRPC's reconnect backoff: the
// drainer's own backoff already paces retries.
func (s *Sink) Send(ctx context.Context, events []event.Event) error {
	if len(events) == 0 {
		return nil
	}
	req := &pb.HealthEvents{Version: event.SchemaVersion, Events: make([]*pb.HealthEvent, len(events))}
	for i := range events {
		req.Events[i] = ToProto(&events[i], s.node)
	}

	client, err := s.clientConn()
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err = client.HealthEventOccurredV1(cctx, req)
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	if st.Code() == codes.InvalidArgument {
		return sink.Permanent(fmt.Errorf("platform connector %s rejected %d events (first %s): %s", s.path, len(events), events[0].ID, st.Message()))
	}
	if st.Code() == codes.ResourceExhausted {
		err := fmt.Errorf("platform connector %s: %d events not delivered: %s: %s", s.path, len(events), st.Code(), st.Message())
		if len(events) == 1 && strings.Contains(st.Message(), "larger than max") {
			return sink.Permanent(sink.TooLarge(err))
		}
		return sink.TooLarge(err)
	}
	s.reset(st)
	return fmt.Errorf("platform connector %s: %d events not delivered: %s: %s%s", s.path, len(events), st.Code(), st.Message(), hint(st.Code()))
}

func hint(c codes.Code) string {
	if c == codes.Unavailable {
		return " (is NVSentinel's platform connector running and listening on this socket?)"
	}
	return ""
}

func (s *Sink) clientConn() (pb.PlatformConnectorClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("platform connector sink is closed")
	}
	if s.client != nil {
		return s.client, nil
	}
	conn, err := grpc.NewClient(s.target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("nichealthd"),
	)
	if err != nil {
		// NewClient fails only on a malformed target, which New rules out.
		return nil, fmt.Errorf("platform connector %s: %w", s.path, err)
	}
	s.conn, s.client = conn, pb.NewPlatformConnectorClient(conn)
	return s.client, nil
}

func (s *Sink) reset(st *status.Status) {
	s.mu.Lock()
	conn := s.conn
	s.conn, s.client = nil, nil
	s.mu.Unlock()
	if conn != nil {
		s.logger.Debug("dropping platform connector connection after a failed call", "socket", s.path, "code", st.Code().String(), "err", st.Message())
		_ = conn.Close()
	}
}

// Close implements sink.Sink.
func (s *Sink) Close() error {
	s.mu.Lock()
	conn := s.conn
	s.conn, s.client, s.closed = nil, nil, true
	s.mu.Unlock()
	if conn == nil {
		return nil
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("platform connector %s: close: %w", s.path, err)
	}
	return nil
}
