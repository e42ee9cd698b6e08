package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

// Names are the binaries Debian's chromium package installs, in order.
var Names = []string{"chromium", "chromium-browser", "google-chrome"}

// Browser is one headless Chromium with one page attached.
type Browser struct {
	cmd     *exec.Cmd
	toChr   *os.File
	mu      sync.Mutex
	nextID  int
	pending map[int]chan reply
	session string
	done    chan struct{}
	stderr  bytes.Buffer
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Start runs Chromium for the test and attaches to a blank page; the test
// ends it. A machine without Chromium skips the test, or fails it under
// CI=true (internal/component).
func Start(t *testing.T) *Browser {
	t.Helper()
	var bin string
	for _, n := range Names {
		if p, err := exec.LookPath(n); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		component.Missing(t, "no headless Chromium in PATH (apt-get install chromium)")
		return nil
	}
	// Chromium reads commands on fd 3 and writes answers on fd 4.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &Browser{toChr: cmdW, pending: map[int]chan reply{}, done: make(chan struct{})}
	b.cmd = exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "--window-size=1600,1000", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, outW}
	b.cmd.Stderr = &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	cmdR.Close()
	outW.Close()
	go b.read(outR)
	t.Cleanup(func() {
		b.toChr.Close()
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
		<-b.done
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b.stderr.String())
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	b.session = att.SessionID
	return b
}

func (b *Browser) read(r *os.File) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID int `json:"id"`
			reply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // an event: nothing here waits for events
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.reply
		}
	}
}

// callTimeout bounds one protocol call: a page that never answers fails
// the test instead of hanging it.
const callTimeout = 60 * time.Second

func (b *Browser) call(session, method string, params any, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.toChr.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: chromium exited", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: no answer within %s", method, callTimeout)
	}
}

// Navigate opens url in the page and waits until the document's body
// carries data-ready="true" (the page sets it when it has drawn).
func (b *Browser) Navigate(t *testing.T, url string) {
	t.Helper()
	if err := b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(callTimeout)
	for time.Now().Before(deadline) {
		var ready bool
		if err := b.eval(`!!document.body && document.body.getAttribute("data-ready") === "true"`, &ready); err == nil && ready {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	var errs string
	_ = b.eval(`document.documentElement.outerHTML.slice(0, 2000)`, &errs)
	t.Fatalf("%s never became ready; the page: %s", url, errs)
}

// Eval runs a JavaScript expression in the page and decodes its value
// into out (nil to ignore it). An exception fails the test.
func (b *Browser) Eval(t *testing.T, expr string, out any) {
	t.Helper()
	if err := b.eval(expr, out); err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
}

func (b *Browser) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return errors.New(r.ExceptionDetails.Text + " " + r.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Click clicks the centre of the first element matching a CSS selector
// with the mouse, as a person would (pressed and released at its spot).
func (b *Browser) Click(t *testing.T, selector string) {
	t.Helper()
	sel, _ := json.Marshal(selector)
	var r struct {
		X, Y  float64
		Found bool
	}
	b.Eval(t, `(function(){var e=document.querySelector(`+string(sel)+`); if(!e) return {Found:false};
		e.scrollIntoView({block:"center",inline:"center"}); var r=e.getBoundingClientRect();
		return {Found:true, X:r.left+r.width/2, Y:r.top+r.height/2};})()`, &r)
	if !r.Found {
		t.Fatalf("click: no element matches %s", selector)
	}
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p := map[string]any{"type": typ, "x": r.X, "y": r.Y}
		if typ != "mouseMoved" {
			p["button"], p["clickCount"] = "left", 1
		}
		if err := b.call(b.session, "Input.dispatchMouseEvent", p, nil); err != nil {
			t.Fatalf("click %s: %v", selector, err)
		}
	}
}

// Type focuses the first element matching selector and types text into it
// key by key.
func (b *Browser) Type(t *testing.T, selector, text string) {
	t.Helper()
	sel, _ := json.Marshal(selector)
	b.Eval(t, `document.querySelector(`+string(sel)+`).focus()`, nil)
	if err := b.call(b.session, "Input.insertText", map[string]any{"text": text}, nil); err != nil {
		t.Fatalf("type into %s: %v", selector, err)
	}
}
