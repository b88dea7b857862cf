package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestArgumentsOffTheSchemaNeverReachTheTab (issue 24 item 10): the relay
// checks a call's arguments against the tool's inputSchema before the
// call reaches the tab. The probe's notes tool, its schema closed
// (additionalProperties: false), gets a number for its text, no
// arguments at all, and a property it does not declare: each is answered
// -32602 with the schema's complaint, and none ran (the tab's note list
// stays empty; today the third added its note and the first two reached
// the tab's own refusal).
func TestArgumentsOffTheSchemaNeverReachTheTab(t *testing.T) {
	var b map[string]any
	if err := json.Unmarshal(protocol.ProbeBundleJSON(), &b); err != nil {
		t.Fatal(err)
	}
	for _, tool := range b["tools"].([]any) {
		if tool := tool.(map[string]any); tool["name"] == "notes" {
			tool["inputSchema"].(map[string]any)["additionalProperties"] = false
		}
	}
	raw, _ := json.Marshal(b)
	closed, err := protocol.LoadBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, _, c := connectedMCPWith(t, func(cfg *node.Config) { cfg.Bundle = closed })
	for _, tc := range []struct {
		args map[string]any
		says string
	}{
		{map[string]any{"action": "add", "text": 123}, "/properties/text: type: 123 has type \"integer\", want \"string\""},
		{map[string]any{}, "required: missing properties: [\"action\"]"},
		{map[string]any{"action": "add", "text": "hi", "title": "x"}, "unexpected additional properties [\"title\"]"},
	} {
		rep := c.send("tools/call", map[string]any{"name": "notes", "arguments": tc.args}, false, nil)
		msg, _ := rep.err["message"].(string)
		if rep.err == nil || rep.err["code"] != float64(-32602) || !strings.Contains(msg, tc.says) {
			t.Fatalf("notes %v: %d %v %v, want -32602 saying %s", tc.args, rep.status, rep.err, rep.result, tc.says)
		}
	}
	rep := c.send("tools/call", map[string]any{"name": "notes", "arguments": map[string]any{"action": "list"}}, false, nil)
	if text := rep.text(); !strings.Contains(text, `{"notes":[]}`) && !strings.Contains(text, `{"notes":null}`) {
		t.Fatalf("the notes after the refused calls: %s (a refused call ran)", text)
	}
}
