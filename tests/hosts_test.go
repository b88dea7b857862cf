package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/node"
)

// waitReport is what tests/node/ts-client-wait.mjs printed: the progress
// the official TypeScript client heard, and how its call ended.
type waitReport struct {
	progress []map[string]any
	end      map[string]any // its "result" or "error" line
}

// messages are the progress notifications' messages, in order.
func (w waitReport) messages() []string {
	var out []string
	for _, p := range w.progress {
		m, _ := p["message"].(string)
		out = append(out, m)
	}
	return out
}

// tsWaitingCall has the official TypeScript client make one tools/call
// with a request timeout reset by progress (resetTimeoutOnProgress), as a
// host with a 60 s limit does, and returns what it heard.
func tsWaitingCall(t *testing.T, relayURL, token, era, tool string, args map[string]any, timeout time.Duration) waitReport {
	t.Helper()
	return tsStartWaitingCall(t, relayURL, token, era, tool, args, timeout)()
}

// tsStartWaitingCall starts the call of tsWaitingCall and returns what
// waits for its end and reads what the client heard (on t's goroutine).
func tsStartWaitingCall(t *testing.T, relayURL, token, era, tool string, args map[string]any, timeout time.Duration) func() waitReport {
	t.Helper()
	node, script := tsClientScript(t, "ts-client-wait.mjs")
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "TABRELAY_URL="+relayURL, "TABRELAY_TOKEN="+token, "TABRELAY_ERA="+era,
		"TABRELAY_TOOL="+tool, "TABRELAY_ARGS="+string(raw), "TABRELAY_TIMEOUT_MS="+strconv.FormatInt(timeout.Milliseconds(), 10))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the TypeScript client (%s era): %v", era, err)
	}
	return func() waitReport {
		t.Helper()
		err := cmd.Wait()
		out := stdout.Bytes()
		if err != nil {
			t.Fatalf("the TypeScript client (%s era): %v\n%s\n%s", era, err, out, stderr.String())
		}
		var rep waitReport
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line["event"] {
			case "progress":
				rep.progress = append(rep.progress, line)
			case "result", "error":
				rep.end = line
			}
		}
		if rep.end == nil {
			t.Fatalf("the TypeScript client (%s era) printed no end:\n%s\n%s", era, out, stderr.String())
		}
		return rep
	}
}

// TestTypeScriptClientWithATimeoutWaitsForThePerson is issue 25 item 1 as
// a host lives it: the official TypeScript client with its default 60 s
// request timeout, reset by progress, calls a tool the person is asked
// about, and the person answers at 90 s. The relay's progress while the
// person is asked (every 15 s, its default) keeps the client waiting, in
// both eras, and it gets the tab's result. Before, one progress came when
// the person was asked and then nothing: the client gave up at 60 s and
// the card was withdrawn. This test takes 90 s of real time (both eras
// at once), in which it only waits: it is parallel, so that the browser
// tests (browser_test.go says why they are parallel) run meanwhile. TestTypeScriptClientWithATimeoutWaitsForALongTool
// is its quick form.
func TestTypeScriptClientWithATimeoutWaitsForThePerson(t *testing.T) {
	t.Parallel() // beside the browser tests: see browser_test.go
	eras := []string{"legacy", "2026-07-28"}
	waits := make([]func() waitReport, len(eras))
	for i, era := range eras { // both calls wait at once
		r := startRelay(t, nil)
		b, _ := pairedBrowser(t, r, "--answer-after", "90s")
		_, tokens := connect(t, r, b, newHost(t, r.url))
		waits[i] = tsStartWaitingCall(t, r.url, tokens["access_token"].(string), era, "clear_all", nil, 60*time.Second)
	}
	for i, era := range eras {
		rep := waits[i]()
		if rep.end["event"] != "result" || rep.end["isError"] == true || !strings.Contains(fmt.Sprint(rep.end["text"]), "cleared") {
			t.Fatalf("%s era: the client got %v after %d progress notifications %q; want the tab's result", era, rep.end, len(rep.progress), rep.messages())
		}
		stills := 0
		for _, m := range rep.messages() {
			if strings.Contains(m, "Still waiting for the person to answer") {
				stills++
			}
		}
		if stills == 0 {
			t.Fatalf("%s era: no progress said the relay still waits for the person: %q", era, rep.messages())
		}
		t.Logf("%s era: the result after %v ms, %d progress notifications (%d while waiting for the person)",
			era, rep.end["atMs"], len(rep.progress), stills)
	}
}

// TestTypeScriptClientWithATimeoutWaitsForALongTool: a tool that runs
// longer than the client's request timeout, with the relay's progress
// interval and the client's timeout scaled down (0.3 s, 1.5 s; the tool
// runs 4 s). The progress says the call still runs in the tab; the
// client, resetting its timeout on it, gets the result.
func TestTypeScriptClientWithATimeoutWaitsForALongTool(t *testing.T) {
	for _, era := range []string{"legacy", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			r := startRelay(t, func(c *node.Config) { c.KeepAlive = 300 * time.Millisecond })
			b, _ := pairedBrowser(t, r)
			_, tokens := connect(t, r, b, newHost(t, r.url))
			rep := tsWaitingCall(t, r.url, tokens["access_token"].(string), era, "wait", map[string]any{"ms": 4000}, 1500*time.Millisecond)
			if rep.end["event"] != "result" || rep.end["isError"] == true || !strings.Contains(rep.end["text"].(string), "waited") {
				t.Fatalf("the client got %v after progress %q; want the tab's result", rep.end, rep.messages())
			}
			if len(rep.progress) == 0 || !strings.Contains(rep.messages()[0], "Still running in the tab") {
				t.Fatalf("progress %q; want the relay saying the call still runs in the tab", rep.messages())
			}
			last := 0.0
			for _, p := range rep.progress {
				v, _ := p["progress"].(float64)
				if v <= last {
					t.Fatalf("progress went %v then %v: it must grow with every notification", last, v)
				}
				last = v
			}
			t.Logf("%s era: the result after %v ms, %d progress notifications", era, rep.end["atMs"], len(rep.progress))
		})
	}
}
