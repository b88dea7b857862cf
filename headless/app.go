package headless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// app is the probe app's state in this tab (each process is its own tab).
type app struct {
	mu      sync.Mutex // guards the fields below
	counter int64
	notes   []string
}

// args are a call's arguments, each still JSON.
type args map[string]json.RawMessage

// toolFunc runs one tool of the probe app. When ctx ends first it returns
// anything: the result is not sent.
type toolFunc func(t *Tab, ctx context.Context, c protocol.Call, a args) protocol.TabResult

// probeTools are the tools of protocol/probe_bundle.json.
var probeTools = map[string]toolFunc{
	"whoami":       toolWhoami,
	"counter":      toolCounter,
	"notes":        toolNotes,
	"clear_all":    toolClearAll,
	"view_picture": toolViewPicture,
	"echo":         toolEcho,
	"wait":         toolWait,
	"fail":         toolFail,
}

// Limits of the probe tools' arguments (probe_bundle.json's schemas).
const (
	pictureHeight   = 32
	pictureWidth    = 64
	pictureMaxWidth = 1024
	waitMaxMs       = 600_000
)

// runTool runs c's tool: one of the bundle's that the probe app has, or,
// when the bundle is the conformance bundle, one of its fixtures.
func (t *Tab) runTool(ctx context.Context, c protocol.Call) protocol.TabResult {
	tools := probeTools
	if t.bundle.App.Name == ConformanceApp {
		tools = fixtureTools
	}
	fn, ok := tools[c.Tool]
	if _, inBundle := t.bundle.Tool(c.Tool); !ok || !inBundle {
		return failure("This tab has no tool %q.", c.Tool)
	}
	a := args{}
	if len(bytes.TrimSpace(c.Arguments)) > 0 && string(bytes.TrimSpace(c.Arguments)) != "null" {
		if err := json.Unmarshal(c.Arguments, &a); err != nil {
			return failure("The arguments of %s are not a JSON object.", c.Tool)
		}
	}
	return fn(t, ctx, c, a)
}

func failure(format string, v ...any) protocol.TabResult {
	return protocol.TabResult{Error: fmt.Sprintf(format, v...)}
}

func data(v any) protocol.TabResult {
	b, err := json.Marshal(v)
	if err != nil {
		return failure("The tab could not encode its result.")
	}
	return protocol.TabResult{Data: b}
}

// str returns argument name as a string ("" when absent).
func (a args) str(name string) (string, error) {
	var s string
	if raw, ok := a[name]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%s must be a string", name)
		}
	}
	return s, nil
}

// integer returns argument name as an integer (def when absent).
func (a args) integer(name string, def int64) (int64, error) {
	n := def
	if raw, ok := a[name]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, fmt.Errorf("%s must be an integer", name)
		}
	}
	return n, nil
}

// step tells the relay that c's connection changed the tab's state, for
// its turns (SPEC §1).
func (t *Tab) step(c protocol.Call) {
	if c.Connection.ID != "" {
		t.deliver(protocol.Step{Envelope: protocol.Typed(protocol.TypeStep), By: c.Connection.ID})
	}
}

func toolWhoami(t *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	t.mu.Lock()
	at := t.focusedAt
	t.mu.Unlock()
	return data(map[string]any{"tab": t.name, "focusedAt": at})
}

func toolCounter(t *Tab, _ context.Context, c protocol.Call, a args) protocol.TabResult {
	action, err := a.str("action")
	if err != nil {
		return failure("counter: %v.", err)
	}
	by, err := a.integer("by", 1)
	if err != nil {
		return failure("counter: %v.", err)
	}
	t.app.mu.Lock()
	switch action {
	case "get":
	case "increment":
		t.app.counter += by
	case "reset":
		t.app.counter = 0
	default:
		t.app.mu.Unlock()
		return failure("counter: the action must be get, increment or reset, not %q.", action)
	}
	n := t.app.counter
	t.app.mu.Unlock()
	if action != "get" {
		t.step(c)
	}
	return data(map[string]int64{"counter": n})
}

func toolNotes(t *Tab, _ context.Context, c protocol.Call, a args) protocol.TabResult {
	action, err := a.str("action")
	if err != nil {
		return failure("notes: %v.", err)
	}
	text, err := a.str("text")
	if err != nil {
		return failure("notes: %v.", err)
	}
	t.app.mu.Lock()
	switch action {
	case "list":
	case "add":
		if text == "" {
			t.app.mu.Unlock()
			return failure("notes: add needs a text.")
		}
		t.app.notes = append(t.app.notes, text)
	case "clear":
		t.app.notes = nil
	default:
		t.app.mu.Unlock()
		return failure("notes: the action must be list, add or clear, not %q.", action)
	}
	notes := append([]string{}, t.app.notes...)
	t.app.mu.Unlock()
	if action != "list" {
		t.step(c)
	}
	return data(map[string][]string{"notes": notes})
}

// toolClearAll asks the person first (asking … answered), as the app's
// dialog would; a cancel withdraws the question and changes nothing.
func toolClearAll(t *Tab, ctx context.Context, c protocol.Call, _ args) protocol.TabResult {
	t.deliver(protocol.Asking{Envelope: protocol.Typed(protocol.TypeAsking), ID: c.ID})
	if t.opts.AnswerAfter < 0 {
		<-ctx.Done()
		return protocol.TabResult{}
	}
	if sleep(ctx, t.opts.AnswerAfter) != nil {
		return protocol.TabResult{}
	}
	t.deliver(protocol.Asking{Envelope: protocol.Typed(protocol.TypeAnswered), ID: c.ID})
	t.app.mu.Lock()
	t.app.counter, t.app.notes = 0, nil
	t.app.mu.Unlock()
	t.step(c)
	return data(map[string]bool{"cleared": true})
}

func toolViewPicture(t *Tab, _ context.Context, _ protocol.Call, a args) protocol.TabResult {
	w, err := a.integer("width", pictureWidth)
	if err != nil || w < 1 || w > pictureMaxWidth {
		return failure("view_picture: the width must be an integer from 1 to %d.", pictureMaxWidth)
	}
	t.app.mu.Lock()
	n := t.app.counter
	t.app.mu.Unlock()
	pic, err := drawCounter(int(w), n)
	if err != nil {
		return failure("view_picture: the picture could not be drawn.")
	}
	res := data(map[string]int64{"width": w, "height": pictureHeight})
	res.Images = []protocol.Media{{MimeType: "image/png", Data: base64.StdEncoding.EncodeToString(pic)}}
	return res
}

// drawCounter draws n as bars (3 px wide, 1 px apart; red when n < 0) on
// a w × pictureHeight PNG; bars that do not fit are left out.
func drawCounter(w int, n int64) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, w, pictureHeight))
	bg, bar := color.RGBA{0xf4, 0xf4, 0xf4, 0xff}, color.RGBA{0x2b, 0x6c, 0xd8, 0xff}
	if n < 0 {
		n, bar = -n, color.RGBA{0xd8, 0x3b, 0x2b, 0xff}
	}
	for x := range w {
		inBar := x%4 != 3 && int64(x/4) < n
		for y := range pictureHeight {
			c := bg
			if inBar && y >= 4 && y < pictureHeight-4 {
				c = bar
			}
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func toolEcho(_ *Tab, _ context.Context, _ protocol.Call, a args) protocol.TabResult {
	value := a["value"]
	if value == nil {
		value = json.RawMessage("null")
	}
	return data(map[string]json.RawMessage{"value": value})
}

func toolWait(_ *Tab, ctx context.Context, _ protocol.Call, a args) protocol.TabResult {
	if _, ok := a["ms"]; !ok {
		return failure("wait: ms is required.")
	}
	ms, err := a.integer("ms", 0)
	if err != nil || ms < 0 || ms > waitMaxMs {
		return failure("wait: ms must be an integer from 0 to %d.", waitMaxMs)
	}
	if sleep(ctx, time.Duration(ms)*time.Millisecond) != nil {
		return protocol.TabResult{}
	}
	return data(map[string]int64{"waited": ms})
}

func toolFail(_ *Tab, _ context.Context, _ protocol.Call, a args) protocol.TabResult {
	msg, err := a.str("message")
	if err != nil || msg == "" {
		msg = "it failed"
	}
	return protocol.TabResult{Error: msg}
}
