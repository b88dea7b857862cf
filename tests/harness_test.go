// Package tests holds the end-to-end tests: the relay started in-process
// (so that calls go through node.Call, the function the MCP front end
// uses) or as a real `tabrelay serve` process, and real `tabrelay tab`
// processes over real sockets.
package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/internal/testwait"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
)

const origin = "http://app.test:8080"

// patience bounds waits for what must happen soon; rules never wait on it.
const patience = 10 * time.Second

// binary is the tabrelay command built once for these tests.
var binary string

func TestMain(m *testing.M) {
	if addr := os.Getenv(goSDKPeerEnv); addr != "" {
		os.Exit(serveGoSDKPeer(addr))
	}
	dir, err := os.MkdirTemp("", "tabrelay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "tabrelay")
	build := exec.Command("go", "build", "-o", binary, "../cmd/tabrelay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tabrelay:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// relay is a node started in this process.
type relay struct {
	t      testing.TB
	node   *node.Node
	bundle *protocol.Bundle // the node's, which encodes its results
	clock  *clock.Fake
	key    []byte
	url    string
	logs   *syncbuf.Buffer
}

func startRelay(t testing.TB, tweak func(*node.Config)) *relay {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	logs := &syncbuf.Buffer{}
	fake := clock.NewFake(time.Now())
	listen := freePort(t)
	cfg := node.Config{
		PublicURL: "http://" + listen, Listen: listen, AdminListen: "127.0.0.1:0",
		DataDir: t.TempDir(), SigningKey: key, AllowedOrigins: []string{origin}, Bundle: protocol.ProbeBundle(),
		CallWait: 225 * time.Second, TurnIdle: 120 * time.Second, DrainWindow: time.Second, Grace: 5 * time.Second,
		Clock: fake, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return &relay{t: t, node: n, bundle: cfg.Bundle, clock: fake, key: key, url: "http://" + n.Addr(), logs: logs}
}

// browser is one browser: a secret file shared by its tab processes.
type browser struct {
	t          testing.TB
	secretFile string
	execLog    string
	procs      []*tabProc
}

// tabs are the tab processes of the browser started so far.
func (b *browser) tabs() []*tabProc { return b.procs }

func newBrowser(t testing.TB) *browser {
	dir := t.TempDir()
	return &browser{t: t, secretFile: filepath.Join(dir, "browser.secret"), execLog: filepath.Join(dir, "exec.log")}
}

// pairing derives the browser's pairing id as the relay does.
func (b *browser) pairing(key []byte) string {
	b.t.Helper()
	raw, err := os.ReadFile(b.secretFile)
	if err != nil {
		b.t.Fatal(err)
	}
	secret, err := pairing.ParseSecret(strings.TrimSpace(string(raw)))
	if err != nil {
		b.t.Fatal(err)
	}
	id, _ := pairing.Derive(key, secret)
	return id
}

// tabProc is a running `tabrelay tab` process.
type tabProc struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	exited chan struct{} // closed when the process ended; err holds how
	err    error
}

// startTab runs a headless tab of b against relayURL.
func (b *browser) startTab(relayURL, name string, extra ...string) *tabProc {
	b.t.Helper()
	args := append([]string{"tab", "--relay", relayURL, "--origin", origin, "--secret-file", b.secretFile,
		"--name", name, "--exec-log", b.execLog, "--backoff-min", "50ms", "--backoff-max", "500ms"}, extra...)
	cmd := exec.Command(binary, args...)
	p := &tabProc{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	b.procs = append(b.procs, p)
	b.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(patience):
			cmd.Process.Kill()
		}
		if b.t.Failed() {
			b.t.Logf("tab %s stderr:\n%s", name, p.stderr.String())
		}
	})
	return p
}

// waitTabs waits until the pairing holds n tabs.
func (r *relay) waitTabs(pairing string, n int) *actors.Snapshot {
	r.t.Helper()
	var s *actors.Snapshot
	eventually(r.t, func() bool {
		var err error
		s, err = r.node.Inspect(context.Background(), pairing)
		return err == nil && len(s.Tabs) == n
	}, "pairing %s holds %d tabs", pairing, n)
	return s
}

// waitSecret waits for the first tab of b to write its secret file.
func (b *browser) waitSecret() {
	b.t.Helper()
	eventually(b.t, func() bool {
		raw, err := os.ReadFile(b.secretFile)
		return err == nil && len(strings.TrimSpace(string(raw))) == 43
	}, "secret file written")
}

type callResult struct {
	result  protocol.ToolResult
	outcome protocol.Outcome
	events  []protocol.CallEvent
}

// call runs one tool call through node.Call, as the MCP front end will.
func (r *relay) call(ctx context.Context, pairing, conn, tool string, args any) callResult {
	r.t.Helper()
	raw, _ := json.Marshal(args)
	var mu sync.Mutex
	var events []protocol.CallEvent
	o := r.node.Call(ctx, protocol.CallRequest{Pairing: pairing, Tool: tool, Arguments: raw,
		Connection: protocol.Connection{ID: conn, Kind: "connector", Client: "E2E", Host: "e2e.test"}},
		func(e protocol.CallEvent) { mu.Lock(); events = append(events, e); mu.Unlock() })
	mu.Lock()
	defer mu.Unlock()
	return callResult{result: protocol.EncodeOutcome(r.bundle, o), outcome: o, events: events}
}

// data decodes the tagged data of an answered call.
func (c callResult) data(t testing.TB) map[string]any {
	t.Helper()
	if c.outcome.Kind != protocol.Answered || len(c.result.Content) == 0 {
		t.Fatalf("call ended %v: %+v", c.outcome.Kind, c.result)
	}
	raw, err := protocol.UntagData(protocol.DefaultDataTag, c.result.Content[0].Text)
	if err != nil {
		t.Fatalf("result text %q: %v", c.result.Content[0].Text, err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

var eventually = testwait.Eventually

// execCounts reads a browser's execution log: call id → runs.
func (b *browser) execCounts() map[string]int {
	b.t.Helper()
	counts := map[string]int{}
	f, err := os.Open(b.execLog)
	if os.IsNotExist(err) {
		return counts
	}
	if err != nil {
		b.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 0 {
			counts[fields[0]]++
		}
	}
	return counts
}

var _ io.Writer = (*syncbuf.Buffer)(nil)
