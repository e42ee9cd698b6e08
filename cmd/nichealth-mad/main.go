package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/internal/version"
	"github.com/nichealth/nichealthd/mad/wire"
)

func main() {
	exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprintln(stdout, "nichealth-mad "+version.String())
		return 0
	}
	if len(args) > 0 {
		fmt.Fprintln(stderr, "nichealth-mad: takes no arguments; it reads requests on stdin (see its package documentation)")
		return 2
	}
	fab, err := newFabric()
	if err != nil {
		fmt.Fprintln(stderr, "nichealth-mad: "+err.Error())
		return 1
	}
	defer fab.Close()
	if err := serve(stdin, stdout, fab); err != nil {
		fmt.Fprintln(stderr, "nichealth-mad: "+err.Error())
		return 1
	}
	return 0
}

// fabric is what the libraries do for each operation; every call returns
// by its deadline.
type fabric interface {
	Ports() ([]wire.LocalPort, error)
	Peer(l wire.Local, deadline time.Time) (wire.Peer, error)
	PeerNode(l wire.Local, deadline time.Time) (wire.Peer, error)
	ClassPortInfo(l wire.Local, lid int, deadline time.Time) (wire.ClassPortInfo, error)
	PortCounters(l wire.Local, lid, port int, deadline time.Time) (wire.PortCounters, error)
	PortCountersExt(l wire.Local, lid, port int, errors bool, deadline time.Time) (wire.PortCountersExt, error)
	NodeInfo(l wire.Local, lid int, deadline time.Time) (wire.Node, error)
	Close()
}

// defaultTimeout is a request's budget when it names none.
const defaultTimeout = time.Second

// serve answers requests until EOF on in.
func serve(in io.Reader, out io.Writer, fab fabric) error {
	r := bufio.NewReaderSize(in, wire.MaxLine)
	for {
		line, err := r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// Too long to be a request: say so once and skip to its end.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if werr := write(out, wire.Answer{Err: &wire.Error{Kind: wire.ErrRequest, Msg: fmt.Sprintf("line exceeds %d bytes", wire.MaxLine)}}); werr != nil {
				return werr
			}
			if err != nil {
				return eof(err)
			}
			continue
		case err != nil && len(line) == 0:
			return eof(err)
		}
		if err := write(out, answer(line, fab)); err != nil {
			return err
		}
	}
}

func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("read stdin: %w", err)
}

func write(out io.Writer, a wire.Answer) error {
	b, err := wire.Encode(a)
	if err != nil {
		b, _ = wire.Encode(wire.Answer{ID: a.ID, Err: &wire.Error{Kind: wire.ErrMAD, Msg: err.Error()}})
	}
	if _, err := out.Write(b); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// answer runs one request line.
func answer(line []byte, fab fabric) wire.Answer {
	req, err := wire.DecodeRequest(line)
	if err != nil {
		return wire.Answer{Err: &wire.Error{Kind: wire.ErrRequest, Msg: clip(err.Error())}}
	}
	budget := time.Duration(req.TimeoutMS) * time.Millisecond
	if budget == 0 {
		budget = defaultTimeout
	}
	deadline := time.Now().Add(budget)
	a := wire.Answer{ID: req.ID}
	switch req.Op {
	case wire.OpHello:
		a.Hello = &wire.Hello{Version: wire.Version, Helper: "nichealth-mad " + version.String()}
		return a
	case wire.OpPorts:
		var ps []wire.LocalPort
		ps, err = fab.Ports()
		if len(ps) > wire.MaxPorts {
			ps = ps[:wire.MaxPorts]
		}
		a.Ports, a.NoPorts = ps, len(ps) == 0
	case wire.OpPeer:
		var p wire.Peer
		p, err = fab.Peer(*req.Local, deadline)
		a.Peer = &p
	case wire.OpPeerNode:
		var p wire.Peer
		p, err = fab.PeerNode(*req.Local, deadline)
		a.Peer = &p
	case wire.OpClassPortInfo:
		var c wire.ClassPortInfo
		c, err = fab.ClassPortInfo(*req.Local, req.LID, deadline)
		a.CPI = &c
	case wire.OpPortCounters:
		var c wire.PortCounters
		c, err = fab.PortCounters(*req.Local, req.LID, req.PortNum, deadline)
		a.Counters = &c
	case wire.OpPortCountersExt:
		var c wire.PortCountersExt
		c, err = fab.PortCountersExt(*req.Local, req.LID, req.PortNum, req.ExtErrors, deadline)
		a.Ext = &c
	case wire.OpNodeInfo:
		var n wire.Node
		n, err = fab.NodeInfo(*req.Local, req.LID, deadline)
		a.Node = &n
	}
	if err != nil {
		var we *wire.Error
		if !errors.As(err, &we) {
			we = &wire.Error{Kind: wire.ErrMAD, Msg: err.Error()}
		}
		we.Msg = clip(we.Msg)
		return wire.Answer{ID: req.ID, Err: we}
	}
	return a
}

// clip keeps an error message within the protocol's bound.
func clip(s string) string {
	if len(s) > wire.MaxText {
		s = s[:wire.MaxText-3] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// describe turns a NodeDescription's 64 bytes into text: up to the first
// NUL, trailing blanks trimmed, bytes that are not printable UTF-8 (C0
// and C1 controls, DEL, bidi overrides and isolates: wire.Unsafe; an
// invalid byte) and the backslash escaped as \xNN (a node names itself;
// the daemon shows it to operators, on terminals and Nagios lines).
func describe(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if wire.Unsafe(r) || r == utf8.RuneError && n == 1 || r == '\\' {
			for _, c := range b[:n] {
				fmt.Fprintf(&s, "\\x%02x", c)
			}
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return strings.TrimRight(s.String(), " ")
}
