package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// scopeOfEntries takes every token for connection c1, whose scope grants
// the entries it holds.
type scopeOfEntries []protocol.ScopeEntry

func (s scopeOfEntries) Verify(context.Context, string) (protocol.Grant, error) {
	return protocol.Grant{ConnectionID: "c1", PairingID: "p1", Scope: s}, nil
}

// listedTools posts tools/list for a connection whose scope is entries.
func listedTools(t *testing.T, entries []protocol.ScopeEntry) map[string]map[string]any {
	t.Helper()
	srv, err := NewServer(Config{PublicURL: "http://127.0.0.1:1", Bundle: protocol.ProbeBundle(), Caller: stubCaller{&[]protocol.CallRequest{}},
		Verifier: scopeOfEntries(entries)})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := post(t, srv, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var rep struct {
		Result struct {
			Tools []map[string]any
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
		t.Fatalf("tools/list: %v: %s", err, w.Body.String())
	}
	out := map[string]map[string]any{}
	for _, tool := range rep.Result.Tools {
		out[tool["name"].(string)] = tool
	}
	return out
}

func actionEnum(t *testing.T, tool map[string]any) []any {
	t.Helper()
	schema, _ := tool["inputSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	action, _ := props["action"].(map[string]any)
	enum, _ := action["enum"].([]any)
	return enum
}

// TestAToolListOffersOnlyTheGrantedActions (issue 15 item 4): a
// connection granted counter:get is offered get alone, in the schema and
// the description; one granted every action sees the tool as the bundle
// has it; one granted no action the tool declares does not see the tool.
func TestAToolListOffersOnlyTheGrantedActions(t *testing.T) {
	t.Run("one action", func(t *testing.T) {
		tools := listedTools(t, []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}})
		counter, ok := tools["counter"]
		if !ok {
			t.Fatalf("counter is not listed: %v", tools)
		}
		if enum := actionEnum(t, counter); len(enum) != 1 || enum[0] != "get" {
			t.Errorf("action enum = %v, want [get]", enum)
		}
		desc := counter["description"].(string)
		if !strings.Contains(desc, "only these actions: `get`") {
			t.Errorf("description does not narrow to get: %q", desc)
		}
		if len(tools) != 1 {
			t.Errorf("listed %d tools, want counter alone", len(tools))
		}
	})
	t.Run("two actions", func(t *testing.T) {
		tools := listedTools(t, []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"reset", "get"}}})
		if enum := actionEnum(t, tools["counter"]); len(enum) != 2 || enum[0] != "get" || enum[1] != "reset" {
			t.Errorf("action enum = %v, want [get reset] in the bundle's order", enum)
		}
	})
	t.Run("every action", func(t *testing.T) {
		tools := listedTools(t, []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"*"}}})
		if enum := actionEnum(t, tools["counter"]); len(enum) != 3 {
			t.Errorf("action enum = %v, want all three", enum)
		}
		if strings.Contains(tools["counter"]["description"].(string), "only these actions") {
			t.Errorf("a tool granted whole was narrowed")
		}
	})
	t.Run("no declared action", func(t *testing.T) {
		tools := listedTools(t, []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"explode"}}})
		if _, ok := tools["counter"]; ok {
			t.Errorf("counter is listed though none of its actions is granted")
		}
	})
}
