package headless

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// ConformanceApp is the app name of protocol.ConformanceBundle(): a tab
// whose bundle has it runs the MCP conformance suite's fixture tools
// instead of the probe app's.
const ConformanceApp = "conformance"

// Reference contents of the conformance suite (its everything-server).
const (
	fixturePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	fixtureWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
	// fixtureStep is the pause between a fixture's progress or log
	// messages (Tab.pause, which tests lengthen).
	fixtureStep = 50 * time.Millisecond
)

// fixtureTools are the tools of protocol/conformance_bundle.json.
var fixtureTools = map[string]toolFunc{
	"test_simple_text":            fixtureSimpleText,
	"test_image_content":          fixtureImage,
	"test_audio_content":          fixtureAudio,
	"test_embedded_resource":      fixtureEmbeddedResource,
	"test_multiple_content_types": fixtureMultipleContentTypes,
	"test_tool_with_logging":      fixtureToolWithLogging,
	"test_logging_tool":           fixtureLoggingTool,
	"test_tool_with_progress":     fixtureToolWithProgress,
	"test_error_handling":         fixtureErrorHandling,
	"test_trigger_tool_change":    fixtureTriggerToolChange,
}

func fixtureSimpleText(_ *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	return data("This is a simple text response for testing.")
}

func fixtureImage(_ *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	res := data("Image content")
	res.Images = []protocol.Media{{MimeType: "image/png", Data: fixturePNG}}
	return res
}

func fixtureAudio(_ *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	res := data("Audio content")
	res.Audio = []protocol.Media{{MimeType: "audio/wav", Data: fixtureWAV}}
	return res
}

func fixtureEmbeddedResource(_ *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	res := data("Embedded resource content")
	res.Resources = []protocol.EmbeddedResource{{URI: "test://embedded-resource", MimeType: "text/plain",
		Text: "This is an embedded resource content."}}
	return res
}

func fixtureMultipleContentTypes(_ *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	res := data("Multiple content types test:")
	res.Images = []protocol.Media{{MimeType: "image/png", Data: fixturePNG}}
	res.Resources = []protocol.EmbeddedResource{{URI: "test://mixed-content-resource", MimeType: "application/json",
		Text: `{"test":"data","value":123}`}}
	return res
}

// fixtureToolWithLogging sends three info lines, a step apart.
func fixtureToolWithLogging(t *Tab, ctx context.Context, c protocol.Call, _ args) protocol.TabResult {
	lines := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}
	for i, line := range lines {
		if i > 0 && sleep(ctx, t.pause) != nil {
			return protocol.TabResult{}
		}
		t.logLine(c, "info", line)
	}
	return data("Tool with logging executed successfully")
}

func fixtureLoggingTool(t *Tab, _ context.Context, c protocol.Call, _ args) protocol.TabResult {
	t.logLine(c, "info", "Logging tool ran")
	return data("Logged")
}

// fixtureToolWithProgress reports 0, 50 and 100 of 100, a step apart.
func fixtureToolWithProgress(t *Tab, ctx context.Context, c protocol.Call, _ args) protocol.TabResult {
	for i, p := range []float64{0, 50, 100} {
		if i > 0 && sleep(ctx, t.pause) != nil {
			return protocol.TabResult{}
		}
		t.deliver(protocol.Progress{Envelope: protocol.Typed(protocol.TypeProgress), ID: c.ID, Progress: p, Total: 100})
	}
	return data("Progress complete")
}

func fixtureErrorHandling(_ *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	return protocol.TabResult{Error: "This tool intentionally returns an error for testing"}
}

func fixtureTriggerToolChange(t *Tab, _ context.Context, _ protocol.Call, _ args) protocol.TabResult {
	t.PermissionsChanged()
	return data("Tools changed")
}

// logLine sends the host a log line of call c.
func (t *Tab) logLine(c protocol.Call, level, text string) {
	b, err := json.Marshal(text)
	if err != nil {
		return
	}
	t.deliver(protocol.Log{Envelope: protocol.Typed(protocol.TypeLog), ID: c.ID, Level: level, Data: b})
}

// PermissionsChanged tells the relay that the tools this tab allows
// changed (permissions-changed): on the current socket, or on the next one
// when none is up.
func (t *Tab) PermissionsChanged() {
	t.deliver(protocol.Typed(protocol.TypePermissionsChanged))
}
