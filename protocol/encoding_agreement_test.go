package protocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The chat in the tab encodes its tool results itself (web/sdk/src/chat/
// encode.ts), and must put them between the data tags exactly as the
// relay does (issue 28 item 5). Both encoders are checked against the same
// cases: web/sdk/test/recorded/encoding.json (test/chat-encode.test.ts
// checks the chat's). TABRELAY_UPDATE_ENCODING=1 writes the relay's
// answers into the file.

type encodingCase struct {
	What    string          `json:"what"`
	Tag     string          `json:"tag"`
	Repeat  []any           `json:"repeat,omitempty"`
	Result  json.RawMessage `json:"result"`
	Text    string          `json:"text"`
	IsError bool            `json:"isError"`
}

// resultOf returns the case's TabResult; "repeat": [s, n] makes its data the string s n times.
func (c encodingCase) resultOf(t *testing.T) TabResult {
	var r TabResult
	if err := json.Unmarshal(c.Result, &r); err != nil {
		t.Fatalf("%s: %v", c.What, err)
	}
	if len(c.Repeat) != 0 {
		var s string
		var n float64
		okS, okN := false, false
		if len(c.Repeat) == 2 {
			s, okS = c.Repeat[0].(string)
			n, okN = c.Repeat[1].(float64)
		}
		if !okS || !okN || n < 1 {
			t.Fatalf("%s: repeat %v, want [string, count]", c.What, c.Repeat)
		}
		r.Data, _ = json.Marshal(strings.Repeat(s, int(n)))
	}
	return r
}

func TestEncodingAgreesWithTheChat(t *testing.T) {
	path := filepath.Join("..", "web", "sdk", "test", "recorded", "encoding.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []encodingCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s has no cases", path)
	}
	update := os.Getenv("TABRELAY_UPDATE_ENCODING") == "1"
	for i, c := range cases {
		got := EncodeResult(c.Tag, c.resultOf(t))
		if len(got.Content) != 1 || got.Content[0].Type != "text" {
			t.Fatalf("%s: content %+v", c.What, got.Content)
		}
		if update {
			cases[i].Text, cases[i].IsError = got.Content[0].Text, got.IsError
			continue
		}
		if got.Content[0].Text != c.Text || got.IsError != c.IsError {
			t.Errorf("%s: the relay encodes\n%.300q (isError %v)\nthe file says\n%.300q (isError %v)", c.What, got.Content[0].Text, got.IsError, c.Text, c.IsError)
		}
	}
	if update {
		// Written as JSON.stringify writes it ('<' and '>' as they are): the
		// tab's data reaches the relay so.
		var out strings.Builder
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cases); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
