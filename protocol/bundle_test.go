package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/protocol"
)

// mutate returns the probe bundle's JSON after f changed it.
func mutate(t *testing.T, f func(b map[string]any)) []byte {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(protocol.ProbeBundleJSON(), &b); err != nil {
		t.Fatal(err)
	}
	f(b)
	out, _ := json.Marshal(b)
	return out
}

func tool(b map[string]any, i int) map[string]any { return b["tools"].([]any)[i].(map[string]any) }

func TestLoadBundleNamesTheBadField(t *testing.T) {
	cases := []struct {
		name, field string
		f           func(b map[string]any)
	}{
		{"no version", "version", func(b map[string]any) { delete(b, "version") }},
		{"other protocol", "protocol", func(b map[string]any) { b["protocol"] = 2 }},
		{"bad app name", "app.name", func(b map[string]any) { b["app"].(map[string]any)["name"] = "Demo App" }},
		{"bad data tag", "dataTag", func(b map[string]any) { b["dataTag"] = "<x>" }},
		{"no tools", "tools", func(b map[string]any) { b["tools"] = []any{} }},
		{"tool name", "tools[0].name", func(b map[string]any) { tool(b, 0)["name"] = "who am i" }},
		{"tool without description", "tools[1].description", func(b map[string]any) { tool(b, 1)["description"] = " " }},
		{"schema not an object", "tools[0].inputSchema", func(b map[string]any) { tool(b, 0)["inputSchema"] = map[string]any{"type": "string"} }},
		{"actions without action property", "tools[1].inputSchema", func(b map[string]any) {
			tool(b, 1)["inputSchema"] = map[string]any{"type": "object", "properties": map[string]any{}}
		}},
		{"duplicate action", "tools[1].actions[1].name", func(b map[string]any) {
			tool(b, 1)["actions"] = []any{map[string]any{"name": "get"}, map[string]any{"name": "get"}}
		}},
		{"star as action", "tools[1].actions[0].name", func(b map[string]any) { tool(b, 1)["actions"] = []any{map[string]any{"name": "*"}} }},
		{"bad result kind", "tools[0].result", func(b map[string]any) { tool(b, 0)["result"] = "rows" }},
		{"duplicate tool", "tools[1].name", func(b map[string]any) { tool(b, 1)["name"] = "whoami" }},
		{"ui not a view", "tools[4].ui", func(b map[string]any) { tool(b, 4)["ui"] = "ui://probe/other" }},
		{"view of another type", "resources[0].mimeType", func(b map[string]any) {
			b["resources"].([]any)[0].(map[string]any)["mimeType"] = "text/html"
		}},
		{"unknown permission kind", "tools[0].permissions", func(b map[string]any) { tool(b, 0)["permissions"] = []any{"explodes"} }},
		{"permission kind twice", "tools[1].actions[2].permissions", func(b map[string]any) {
			tool(b, 1)["actions"].([]any)[2].(map[string]any)["permissions"] = []any{"change", "change"}
		}},
		{"unknown confirm stage", "tools[0].confirmAt", func(b map[string]any) { tool(b, 0)["confirmAt"] = "later" }},
		{"unknown confirm stage of an action", "tools[1].actions[2].confirmAt", func(b map[string]any) {
			tool(b, 1)["actions"].([]any)[2].(map[string]any)["confirmAt"] = "end"
		}},
		{"unknown field", "colour", func(b map[string]any) { b["colour"] = "blue" }},
		{"dataScope group not an argument", "tools[0].dataScope.groups", func(b map[string]any) {
			tool(b, 0)["dataScope"] = map[string]any{"groups": []any{"nope"}}
		}},
		{"dataScope field not a path", "tools[0].dataScope.singleCell", func(b map[string]any) {
			tool(b, 0)["dataScope"] = map[string]any{"singleCell": []any{"a..b"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := protocol.LoadBundle(mutate(t, tc.f))
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v, want one naming %s", err, tc.field)
			}
		})
	}
	if _, err := protocol.LoadBundle([]byte(`{"version":"1"} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

// Permission kinds are optional, on a tool and on an action (whose list
// replaces the tool's), and bundles without them load as before.
func TestBundlePermissionKinds(t *testing.T) {
	b, err := protocol.LoadBundle(mutate(t, func(b map[string]any) {
		tool(b, 1)["permissions"] = []any{"change"}
		tool(b, 1)["actions"].([]any)[2].(map[string]any)["permissions"] = []any{"change", "deletes-saved"}
		tool(b, 1)["actions"].([]any)[2].(map[string]any)["confirmAt"] = "handler"
	}))
	if err != nil {
		t.Fatal(err)
	}
	counter, _ := b.Tool("counter")
	if strings.Join(counter.Permissions, ",") != "change" || strings.Join(counter.Actions[2].Permissions, ",") != "change,deletes-saved" ||
		counter.Actions[0].Permissions != nil || counter.Actions[2].ConfirmAt != "handler" || counter.ConfirmAt != "" {
		t.Fatalf("counter: %+v", counter)
	}
}

func TestShippedBundlesLoad(t *testing.T) {
	if b := protocol.ProbeBundle(); b.Tag() != protocol.DefaultDataTag || len(b.Tools) == 0 {
		t.Fatalf("probe bundle %+v", b)
	}
	c := protocol.ConformanceBundle()
	if _, ok := c.Tool("test_simple_text"); !ok {
		t.Fatal("the conformance bundle lacks test_simple_text")
	}
}

func TestCloseCodeRanges(t *testing.T) {
	for _, c := range protocol.CloseCodes() {
		stop := c.Stop()
		inStop := (c >= 4100 && c <= 4199) || c == protocol.CloseTooBig
		inReconnect := c >= 4000 && c <= 4099
		if stop != inStop || c.Reconnect() == stop || (!inStop && !inReconnect) {
			t.Errorf("%d (%s): stop=%v, reconnect=%v", int(c), c, stop, c.Reconnect())
		}
		if c.Reason() == "" || len(c.Reason()) > 123 || strings.HasPrefix(c.String(), "code_") {
			t.Errorf("%d has no name or reason fit for a close frame", int(c))
		}
	}
	if !protocol.CloseBadSecret.Stop() || !protocol.CloseUnsupportedProtocol.Stop() || !protocol.CloseForgotten.Stop() {
		t.Fatal("bad secret, protocol version and forgotten must tell the tab to stop")
	}
	if protocol.CloseCode(1006).Stop() {
		t.Fatal("an abnormal closure must not stop a tab")
	}
}

// TestBundleUnclassifiedAndDataScope: a tool may leave its result class
// out (the tab's data switch refuses it, unclassified) and say which
// result fields hold single cells or pictures (issue 24 item 2).
func TestBundleUnclassifiedAndDataScope(t *testing.T) {
	b, err := protocol.LoadBundle(mutate(t, func(b map[string]any) {
		delete(tool(b, 0), "result")
		tool(b, 1)["dataScope"] = map[string]any{"singleCell": []any{"columns.*.min"}, "pictures": []any{"thumb"}, "groups": []any{"by"}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if b.Tools[0].Result != "" || b.Tools[1].DataScope == nil || b.Tools[1].DataScope.Groups[0] != "by" {
		t.Fatalf("tools: %+v %+v", b.Tools[0], b.Tools[1].DataScope)
	}
}
