package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits a result is held to (SPEC §10).
const (
	// ResultTextChars is the most characters (runes) a result's text may
	// have, tags and the relay's sentences included.
	ResultTextChars = 150_000
	// ImageMaxSide is the most pixels a picture may have on either side.
	ImageMaxSide = 8_000
	// ImageMaxBase64Bytes is the most base64 bytes a picture may have.
	ImageMaxBase64Bytes = 10 << 20
	// DefaultDataTag is the data tag used when the bundle names none.
	DefaultDataTag = "tabrelay-data"
)

// Media is one picture or sound clip of a result: its standard base64
// bytes and their MIME type.
type Media struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// TabResult is what a tab answers a call with (the `result` message's body).
type TabResult struct {
	Data   json.RawMessage `json:"data,omitempty"` // any JSON value the tool returns
	Images []Media         `json:"images,omitempty"`
	// Error is set when the tool failed: the app's sentence for the
	// agent, sent as data (it may quote data).
	Error string `json:"error,omitempty"`
	// Audio are sound clips (base64, audio/* types), held to the image
	// byte limit.
	Audio []Media `json:"audio,omitempty"`
	// Resources are embedded resources (MCP "resource" content): a uri and
	// its text or base64 blob.
	Resources []EmbeddedResource `json:"resources,omitempty"`
	// Notes are the app's own sentences, written after the closing data
	// tag with the names they quote marked (protocol/notes.go).
	Notes []Note `json:"notes,omitempty"`
	// IsError marks the result as a failure, as an error does, when the
	// notes say why and there is no error of the app's to tag.
	IsError bool `json:"isError,omitempty"`
}

// EmbeddedResource is a resource carried inside a result.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// Content is one MCP content block (only text and image are produced).
type Content struct {
	Type     string            `json:"type"` // "text" | "image" | "audio" | "resource"
	Text     string            `json:"text,omitempty"`
	Data     string            `json:"data,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// ToolResult is the MCP tools/call result the relay answers with.
type ToolResult struct {
	Content []Content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

// maxTagLen is the longest data tag ValidDataTag accepts.
const maxTagLen = 40

// ValidDataTag reports whether tag can name the data tags: a lower-case
// ASCII letter followed by at most 39 lower-case letters, digits or hyphens.
func ValidDataTag(tag string) bool {
	if len(tag) == 0 || len(tag) > maxTagLen || tag[0] < 'a' || tag[0] > 'z' {
		return false
	}
	for i := 1; i < len(tag); i++ {
		c := tag[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// ErrDataTag is returned for a tag ValidDataTag refuses.
var ErrDataTag = errors.New("protocol: invalid data tag")

// TagData returns value as compact JSON between <tag> and </tag>. An empty
// value is written as null; a value that is not JSON is an error.
//
// Every '<' in the JSON is written as \u003c, so nothing in the data can
// close the tag (SPEC §4: results are data, never instructions). Only '<'
// is escaped: '>' and '&' cannot end a tag and stay readable, and U+2028
// and U+2029 are valid JSON text. Bytes that are not UTF-8 (JSON strings may
// hold them) are written as \ufffd, the value json.Unmarshal reads them as,
// so the text is always valid UTF-8 and can be cut between runes. Numbers
// are kept as written (1e400 included): the relay never reads them, and
// the JSON grammar (RFC 8259) allows any size.
func TagData(tag string, value json.RawMessage) (string, error) {
	if !ValidDataTag(tag) {
		return "", ErrDataTag
	}
	inner, err := escapeJSON(value)
	if err != nil {
		return "", err
	}
	return "<" + tag + ">" + inner + "</" + tag + ">", nil
}

// escapeJSON returns value compacted, with '<' written as \u003c and bytes
// that are not UTF-8 as \ufffd (see TagData).
func escapeJSON(value json.RawMessage) (string, error) {
	if len(value) == 0 {
		return "null", nil
	}
	var compact bytes.Buffer
	compact.Grow(len(value))
	if err := json.Compact(&compact, value); err != nil {
		return "", fmt.Errorf("protocol: data is not JSON: %w", err)
	}
	src := compact.Bytes()
	var b strings.Builder
	b.Grow(len(src) + len(src)/16)
	start := 0
	for i := 0; i < len(src); {
		c := src[i]
		if c == '<' {
			b.Write(src[start:i])
			b.WriteString(`\u003c`)
			i++
			start = i
			continue
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			// Only inside a string: json.Compact refused it anywhere else.
			b.Write(src[start:i])
			b.WriteString(`\ufffd`)
			start = i + 1
		}
		i += size
	}
	b.Write(src[start:])
	return b.String(), nil
}

// UntagData finds the first <tag>…</tag> in text and returns the JSON
// between them, with the \u003c escapes TagData wrote turned back into '<':
// json.Unmarshal of it gives the value that was tagged. It is an error when
// the tags are missing or what they hold is not JSON (a cut result's is not).
func UntagData(tag, text string) (json.RawMessage, error) {
	if !ValidDataTag(tag) {
		return nil, ErrDataTag
	}
	open, end := "<"+tag+">", "</"+tag+">"
	i := strings.Index(text, open)
	if i < 0 {
		return nil, fmt.Errorf("protocol: no %s tag in the text", open)
	}
	inner := text[i+len(open):]
	j := strings.Index(inner, end)
	if j < 0 {
		return nil, fmt.Errorf("protocol: no %s tag after %s", end, open)
	}
	inner = inner[:j]
	if !json.Valid([]byte(inner)) {
		return nil, errors.New("protocol: the tagged data is not JSON")
	}
	return unescapeLT(inner), nil
}

// unescapeLT turns each \u003c escape in valid JSON text back into '<'.
// Escapes are walked whole, so the "u003c" of an escaped backslash ("\\u003c")
// stays as it is.
func unescapeLT(s string) json.RawMessage {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+6 <= len(s) && s[i+1] == 'u' && strings.EqualFold(s[i+2:i+6], "003c") {
			out = append(out, '<')
			i += 5
			continue
		}
		// Valid JSON: a backslash always has the escaped byte after it.
		out = append(out, c, s[i+1])
		i++
	}
	return out
}

// TagNote returns value (JSON) between the data tags, escaped as TagData
// escapes, with its data cut to at most limit runes and the cut said after
// the closing tag. It is for the short texts of a call that reach a host
// besides the result (a progress message, a log line's data): text from a
// tab is data wherever it reaches a model (SPEC §4). A value that is not
// JSON is written as null; an invalid tag is replaced by DefaultDataTag.
func TagNote(tag string, value json.RawMessage, limit int) string {
	if !ValidDataTag(tag) {
		tag = DefaultDataTag
	}
	inner, err := escapeJSON(value)
	if err != nil {
		inner = "null"
	}
	open, end := "<"+tag+">", "</"+tag+">"
	total := utf8.RuneCountInString(inner)
	if total <= limit {
		return open + inner + end
	}
	at, kept := cutPoint(inner, max(limit, 0))
	return fmt.Sprintf("%s%s%s (cut: the first %s of %s characters)", open, inner[:at], end, formatCount(kept), formatCount(total))
}

// QuoteName returns name marked the way data is: the JSON string of name
// between the data tags. A relay sentence quotes a name through it, so that
// a name written by others reads as data and cannot close the tag (SPEC §4):
//
//	fmt.Sprintf("The tool %s is not in this connection's scope.", QuoteName(tag, toolName))
//
// An invalid tag is replaced by DefaultDataTag: a name is never left unmarked.
func QuoteName(tag, name string) string {
	if !ValidDataTag(tag) {
		tag = DefaultDataTag
	}
	return "<" + tag + ">" + jsonString(name) + "</" + tag + ">"
}

// jsonString returns s as a JSON string escaped as TagData escapes: '<' as
// \u003c, bytes that are not UTF-8 as \ufffd, nothing else HTML-escaped.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return strings.ReplaceAll(string(q), "<", `\u003c`)
}

// maxPictureSentences is how many pictures left out get a sentence each;
// the rest share one, so the relay's own words stay short whatever the tab
// sends.
const maxPictureSentences = 10

// EncodeResult is the one encoding of a tab's answer into an MCP result
// (SPEC §4). The text block holds the tab's JSON between the data tags,
// then, after the closing tag and each after a blank line, the app's own
// notes (r.Notes, names marked) and the relay's own sentences: those
// given, then any this function adds (a note or picture left out, data
// that is not JSON, a cut). Pictures that pass ImageCheck follow as
// image blocks, then sound clips and embedded resources (otherContents).
//
// When r.Error is set the result is an error and the tagged value is
// {"error": r.Error} (with "data" when the tab sent some too): the app's
// sentence is its own, not the relay's, and may quote names and values
// written by others, so it travels as data like any other answer.
//
// Data that is not JSON is never passed on: the result is an error with a
// sentence saying so, and the tags hold null (or the error object).
//
// Every text that reaches a model is tagged: an embedded resource's text
// is its JSON string between the data tags, like the main data. The
// ResultTextChars limit counts all of them together: over it, the data is
// cut (the main data first, then each resource's text in order) with both
// counts said; every tag and the sentences are kept whole, and a cut never
// splits a rune or an escape. The relay's sentences are not cut: they must
// be short. An invalid tag is replaced by DefaultDataTag.
func EncodeResult(tag string, r TabResult, sentences ...string) ToolResult {
	if !ValidDataTag(tag) {
		tag = DefaultDataTag
	}
	said, noteSaid := noteSentences(tag, r.Notes)
	said = append(said, noteSaid...)
	for _, s := range sentences {
		if s != "" {
			said = append(said, s)
		}
	}
	inner, isError, dataSaid := resultValue(r)
	isError = isError || r.IsError
	said = append(said, dataSaid...)
	images, imageSaid := imageContents(tag, r.Images)
	said = append(said, imageSaid...)
	others, otherSaid := otherContents(r)
	said = append(said, otherSaid...)

	// The texts to fit: the main data, then each text resource's.
	inners := []string{inner}
	var texts []*EmbeddedResource
	extra := 0 // the uris and MIME types a model reads too
	for _, c := range others {
		extra += len(c.MimeType)
		if c.Resource != nil {
			extra += len(c.Resource.URI) + len(c.Resource.MimeType)
		}
		if c.Resource != nil && c.Resource.Text != "" {
			inners = append(inners, jsonString(c.Resource.Text))
			texts = append(texts, c.Resource)
		}
	}
	fitted := fitTexts(tag, inners, extra, said)
	for i, res := range texts {
		res.Text = fitted[i+1]
	}

	content := make([]Content, 0, 1+len(images)+len(others))
	content = append(content, Content{Type: "text", Text: fitted[0]})
	content = append(content, images...)
	content = append(content, others...)
	return ToolResult{Content: content, IsError: isError}
}

// resultValue returns the escaped JSON to tag for r, whether the result is
// an error, and the sentences it needs.
func resultValue(r TabResult) (inner string, isError bool, said []string) {
	data, err := escapeJSON(r.Data)
	if err != nil {
		data, isError = "null", true
		said = append(said, fmt.Sprintf(
			"The tab answered with %s bytes that are not JSON, so they were left out.",
			formatCount(len(r.Data))))
	}
	if r.Error == "" {
		return data, isError, said
	}
	inner = `{"error":` + jsonString(r.Error)
	if err == nil && len(r.Data) > 0 {
		inner += `,"data":` + data
	}
	return inner + "}", true, said
}

// imageContents returns the image blocks of the pictures that pass
// ImageCheck and a sentence for each one left out.
func imageContents(tag string, images []Media) ([]Content, []string) {
	var content []Content
	var said []string
	left := 0
	for i, img := range images {
		w, h, err := ImageCheck(img)
		if err == nil {
			content = append(content, Content{
				Type:     "image",
				Data:     padBase64(img.Data),
				MimeType: strings.ToLower(strings.TrimSpace(img.MimeType)),
			})
			continue
		}
		left++
		if left <= maxPictureSentences {
			said = append(said, leftOutSentence(tag, i+1, img, w, h, err))
		}
	}
	if more := left - maxPictureSentences; more > 0 {
		said = append(said, fmt.Sprintf("%s more pictures were left out too.", formatCount(more)))
	}
	return content, said
}

// fitTexts tags each of inners (escaped JSON) and adds the sentences to
// the first, cutting the data so that all the texts together, with extra
// runes read elsewhere, have at most ResultTextChars runes (SPEC §4, §10):
// the earlier texts keep theirs first. Every text keeps both its tags.
func fitTexts(tag string, inners []string, extra int, said []string) []string {
	open, end := "<"+tag+">", "</"+tag+">"
	tail := ""
	if len(said) > 0 {
		tail = "\n\n" + strings.Join(said, "\n\n")
	}
	out := make([]string, len(inners))
	dataRunes := 0
	for _, in := range inners {
		dataRunes += utf8.RuneCountInString(in)
	}
	fixed := extra + len(inners)*(len(open)+len(end)) + utf8.RuneCountInString(tail)
	if fixed+dataRunes <= ResultTextChars {
		for i, in := range inners {
			out[i] = open + in + end
		}
		out[0] += tail
		return out
	}
	// The sentence is measured with the longest count it can hold (all of
	// the data), so the one written, with the count kept, is never longer.
	longest := "\n\n" + cutSentence(dataRunes, dataRunes)
	budget := max(ResultTextChars-fixed-utf8.RuneCountInString(longest), 0)
	kept := 0
	for i, in := range inners {
		at, n := cutPoint(in, budget)
		budget -= n
		kept += n
		out[i] = open + in[:at] + end
	}
	out[0] += tail + "\n\n" + cutSentence(dataRunes, kept)
	return out
}

// cutSentence says a result was cut, with both counts.
func cutSentence(total, kept int) string {
	return fmt.Sprintf("The result was cut: its data has %s characters; the first %s are shown.",
		formatCount(total), formatCount(kept))
}

// cutPoint returns the byte offset at which to cut the escaped JSON s so
// that at most n runes are kept, and how many are: never inside a rune or
// a backslash escape such as \u003c. In valid JSON a backslash only starts
// an escape, and an escaped backslash is consumed with the escape.
func cutPoint(s string, n int) (offset, kept int) {
	runes, pending := 0, 0 // pending: bytes of an escape still to come
	for i, r := range s {
		if pending == 0 {
			offset, kept = i, runes
		}
		if runes == n {
			return offset, kept
		}
		runes++
		switch {
		case pending > 0:
			pending--
		case r == '\\' && i+1 < len(s) && s[i+1] == 'u':
			pending = 5
		case r == '\\':
			pending = 1
		}
	}
	if pending == 0 {
		return len(s), runes
	}
	return offset, kept
}

// formatCount writes n with commas between thousands: 201345 → "201,345".
func formatCount(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// maxEmbedded is how many embedded resources a result may carry; the rest
// are left out with one sentence, so that their tags cannot fill the text
// limit whatever the tab sends.
const maxEmbedded = 16

// maxURI is the longest resource uri passed on.
const maxURI = 2048

// otherContents passes a result's sound clips and embedded resources on,
// held to the same byte limit as pictures; what is over it or malformed is
// left out with a sentence. Every string of theirs a model may read is
// checked or tagged (SPEC §4: whatever the tab sends): a MIME type must be
// a plain type/subtype, a uri plain printable ASCII without '<' or quotes,
// a blob base64; a resource's text is tagged and counted by EncodeResult.
func otherContents(r TabResult) ([]Content, []string) {
	var out []Content
	var said []string
	for i, a := range r.Audio {
		if len(a.Data) > ImageMaxBase64Bytes || !validMIME(a.MimeType) || !strings.HasPrefix(a.MimeType, "audio/") || !validBase64(a.Data) {
			said = append(said, fmt.Sprintf("Sound clip %d was left out: it is not base64 audio of at most 10 MiB.", i+1))
			continue
		}
		out = append(out, Content{Type: "audio", Data: a.Data, MimeType: a.MimeType})
	}
	for i, res := range r.Resources {
		if i >= maxEmbedded {
			said = append(said, fmt.Sprintf("%s more embedded resources were left out: a result carries at most %d.",
				formatCount(len(r.Resources)-maxEmbedded), maxEmbedded))
			break
		}
		if !validURI(res.URI) || (res.MimeType != "" && !validMIME(res.MimeType)) ||
			len(res.Blob) > ImageMaxBase64Bytes || (res.Blob != "" && (res.Text != "" || !validBase64(res.Blob))) {
			said = append(said, fmt.Sprintf("Embedded resource %d was left out: it needs a plain uri, a plain MIME type, and either text or a base64 blob of at most 10 MiB.", i+1))
			continue
		}
		r := res
		out = append(out, Content{Type: "resource", Resource: &r})
	}
	return out, said
}

// validURI reports whether s can be passed on as a resource uri: a scheme,
// then printable ASCII without spaces, quotes, backslashes or angle
// brackets, at most maxURI bytes.
func validURI(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon < 1 || len(s) > maxURI || !ValidDataTag(strings.ToLower(s[:colon])) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"'<>\`+"`", c) >= 0 {
			return false
		}
	}
	return true
}

// validMIME reports whether s is a plain MIME type: type/subtype of
// letters, digits and ".+-_", at most 100 bytes, no parameters.
func validMIME(s string) bool {
	slash := strings.IndexByte(s, '/')
	if slash < 1 || slash == len(s)-1 || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".+-_", c) >= 0 || i == slash
		if !ok {
			return false
		}
	}
	return true
}

func validBase64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(padBase64(s))
	return err == nil
}
