package tests

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/tabrelay/tabrelay/node"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/ from what the relay answers now, and the README's picture docs/demo.png")

// TestTranscripts fixes the exact JSON-RPC exchanges of both eras. Each
// testdata/mcp-*.txtar holds requests ("-- N request --", with a line of
// headers "Era: legacy|modern" and an optional "Accept: sse"), and the
// answer the relay must give ("-- N response --"): its status, the shape
// it chose when the request accepted both (JSON or the event stream), and
// its body, with what changes from run to run (ids of turns and calls,
// versions) written as placeholders. go test ./tests -run TestTranscripts -update
// writes the answers anew.
func TestTranscripts(t *testing.T) {
	// An answer that comes first is JSON whatever the machine's load: the
	// stream opens only when something comes to stream (the person asked).
	_, _, c := connectedMCPWith(t, func(cfg *node.Config) { cfg.JSONWait = time.Minute })
	replayTranscripts(t, "testdata/mcp-*.txtar", "TestTranscripts", func(t *testing.T, files []txtar.File) []txtar.File {
		var out []txtar.File
		for _, f := range files {
			if !strings.HasSuffix(f.Name, " request") {
				continue
			}
			out = append(out, f, txtar.File{Name: strings.TrimSuffix(f.Name, " request") + " response", Data: c.replay(t, f.Data)})
		}
		return out
	})
}

// replayTranscripts replays each transcript matching pattern as a subtest:
// replay turns its files into what the relay answers now (the files of the
// last answers dropped, the new ones added), and the result must equal the
// file byte for byte, or with -update is written to it. test is the test's
// name, for the message that says how to accept a change.
func replayTranscripts(t *testing.T, pattern, test string, replay func(t *testing.T, files []txtar.File) []txtar.File) {
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		t.Fatalf("no transcripts %s", pattern)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := txtar.Parse(raw)
			ar.Files = replay(t, ar.Files)
			got := txtar.Format(ar)
			if *update {
				os.WriteFile(file, got, 0o644)
				return
			}
			if !bytes.Equal(got, raw) {
				t.Fatalf("%s differs from what the relay answers now (go test ./tests -run %s -update to accept):\n%s", file, test, diffLines(raw, got))
			}
		})
	}
}

// replay sends one transcript request and returns the normalized answer.
func (c *mcpClient) replay(t *testing.T, req []byte) []byte {
	t.Helper()
	head, body, _ := bytes.Cut(req, []byte("\n\n"))
	var msg struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	c.modern = bytes.Contains(head, []byte("Era: modern"))
	c.id = 0 // every request of a transcript has id 1
	sse := bytes.Contains(head, []byte("Accept: sse"))
	rep := c.send(msg.Method, msg.Params, sse, nil)
	var b strings.Builder
	b.WriteString("Status: " + http.StatusText(rep.status) + "\n")
	if sse {
		// A host that accepts both shapes gets the one the relay chose: JSON
		// when the answer came first, the event stream when something came
		// to stream (issue 13).
		mediaType, _, _ := strings.Cut(rep.header.Get("Content-Type"), ";")
		b.WriteString("Content-Type: " + mediaType + "\n")
	}
	b.WriteString("\n")
	for _, e := range rep.events {
		b.WriteString(normalize(e) + "\n")
	}
	reply := map[string]any{}
	if rep.result != nil {
		reply["result"] = rep.result
	}
	if rep.err != nil {
		reply["error"] = rep.err
	}
	b.WriteString(normalize(reply) + "\n")
	return []byte(b.String())
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`turn-[a-z2-7]+`), "turn-…"},
	{regexp.MustCompile(`call-[a-z2-7]+`), "call-…"},
	{regexp.MustCompile(`"version": "[^"]*"`), `"version": "…"`},
}

func normalize(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the transcript shows the data tags as a host reads them
	enc.SetIndent("", "  ")
	enc.Encode(v)
	s := strings.TrimSuffix(buf.String(), "\n")
	for _, r := range volatile {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// diffLines shows the first lines that differ.
func diffLines(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	var out []string
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, "want: "+a, "got:  "+b)
		}
		if len(out) >= 20 {
			break
		}
	}
	return strings.Join(out, "\n")
}
