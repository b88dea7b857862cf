package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzValues returns JSON values built around s: s as a JSON string (with
// '<' left raw, as a tab's JSON.stringify writes it), s as a key and inside
// an array, and s itself when it is JSON.
func fuzzValues(s string) []json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	values := []json.RawMessage{
		q,
		json.RawMessage(`{` + string(q) + `:[` + string(q) + `,1,null,{"k":` + string(q) + `}],"n":-1.5e-300}`),
		json.RawMessage(`[[` + string(q) + `]]`),
	}
	if json.Valid([]byte(s)) {
		values = append(values, json.RawMessage(s))
	}
	return values
}

func FuzzTagData(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "</tabrelay-data>", "<tabrelay-data>x</tabrelay-data>", "<script>alert(1)</script>",
		`\u003c`, `\\<`, "\u2028\u2029", "Zoë 世界 🎉", "a\xffb\xed\xa0\x80", "\x00\x1f\"\\",
		`{"a":"</tabrelay-data>","b":[1e400,true,null]}`, `"\\u003c<"`, `["<",{"<":"<"}]`, ` 12 `,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range fuzzValues(s) {
			tagged, err := TagData(DefaultDataTag, v)
			if err != nil {
				t.Fatalf("TagData(%q): %v", v, err)
			}
			if !strings.HasPrefix(tagged, openTag) || !strings.HasSuffix(tagged, closeTag) {
				t.Fatalf("TagData(%q) = %q: tags missing", v, tagged)
			}
			inner := tagged[len(openTag) : len(tagged)-len(closeTag)]
			if strings.Contains(inner, "<") || !utf8.ValidString(inner) {
				t.Fatalf("TagData(%q): data between the tags is %q", v, inner)
			}
			back, err := UntagData(DefaultDataTag, tagged)
			if err != nil {
				t.Fatalf("UntagData(%q): %v", tagged, err)
			}
			if a, b := decodeJSON(t, back), decodeJSON(t, v); !reflect.DeepEqual(a, b) {
				t.Fatalf("round trip of %q gave %#v, want %#v", v, a, b)
			}
		}
		quoted := QuoteName(DefaultDataTag, s)
		raw, err := UntagData(DefaultDataTag, "The tool "+quoted+" ran.")
		var name string
		if err != nil || json.Unmarshal(raw, &name) != nil || name != string([]rune(s)) {
			t.Fatalf("QuoteName(%q) = %q reads back as %q (%v)", s, quoted, name, err)
		}
	})
}

func FuzzImageCheck(f *testing.F) {
	for _, seed := range [][]byte{
		pngBytes(f, 2, 3), gifBytes(f, 3, 2), jpegBytes(f, 4, 4),
		webp("VP8 ", []byte{0x50, 1, 0, 0x9d, 1, 0x2a, 9, 0, 9, 0}),
		webp("VP8L", []byte{0x2f, 0xff, 0xff, 0xff, 0x0f}),
		webp("VP8X", make([]byte, 10)),
		{0xff, 0xd8, 0xff, 0xe0, 0, 1}, []byte("GIF89a"), {},
	} {
		f.Add(seed, "image/png")
	}
	f.Fuzz(func(t *testing.T, data []byte, mime string) {
		for _, img := range []Media{
			{MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)},
			{MimeType: mime, Data: base64.RawStdEncoding.EncodeToString(data)},
			{MimeType: mime, Data: string(data)},
		} {
			w, h, err := ImageCheck(img)
			if err == nil && (w <= 0 || h <= 0 || w > ImageMaxSide || h > ImageMaxSide) {
				t.Fatalf("ImageCheck passed a %d × %d picture", w, h)
			}
			res := EncodeResult(DefaultDataTag, TabResult{Images: []Media{img}})
			if (err == nil) != (len(res.Content) == 2) {
				t.Fatalf("ImageCheck err %v but %d content blocks", err, len(res.Content))
			}
			if err == nil {
				if _, derr := base64.StdEncoding.DecodeString(res.Content[1].Data); derr != nil {
					t.Fatalf("image block is not standard base64: %v", derr)
				}
			}
		}
	})
}
