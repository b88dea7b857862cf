package protocol

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Note is one of the app's own sentences for the agent (issue 24 item 7;
// the seed's "Text written by others is data"): "The person declined to
// let {0} run “Delete board”.", a refusal, what was left out of a result.
// The relay writes it after the closing data tag, with each {n} replaced
// by Names[n] marked as data (QuoteName): names written by others (a
// board's title, a client's name) never read as the app's words. The
// app's own quoted words (a tool's title) stay in Text, in typographic
// quotes. Every '<' of Text is written as \u003c, like the data's, so no
// note can open or close a data tag.
type Note struct {
	Text  string   `json:"text"`
	Names []string `json:"names,omitempty"`
}

// Limits of a result's notes: the relay's sentences are never cut, so
// the app's must stay short.
const (
	MaxNotes         = 8
	MaxNoteChars     = 1_000
	MaxNoteNames     = 8
	MaxNoteNameChars = 300
)

// noteSentences returns the notes written as sentences (tag: the data
// tag names are marked with), and a sentence of the relay's for each note
// left out (too long, too many names, or a {n} naming none of them).
func noteSentences(tag string, notes []Note) (written, said []string) {
	for i, n := range notes {
		if i >= MaxNotes {
			more, were := len(notes)-MaxNotes, "notes of the app were"
			if more == 1 {
				were = "note of the app was"
			}
			said = append(said, fmt.Sprintf("%s more %s left out: a result carries at most %d.", formatCount(more), were, MaxNotes))
			break
		}
		s, ok := noteSentence(tag, n)
		if !ok {
			said = append(said, fmt.Sprintf("Note %d of the app was left out: a note has at most %s characters and %d names of at most %d characters each, and each {n} in it names one of them.",
				i+1, formatCount(MaxNoteChars), MaxNoteNames, MaxNoteNameChars))
			continue
		}
		if s != "" {
			written = append(written, s)
		}
	}
	return written, said
}

// noteSentence writes one note; false when it breaks a limit or a {n}
// names no name.
func noteSentence(tag string, n Note) (string, bool) {
	if utf8.RuneCountInString(n.Text) > MaxNoteChars || len(n.Names) > MaxNoteNames {
		return "", false
	}
	for _, name := range n.Names {
		if utf8.RuneCountInString(name) > MaxNoteNameChars {
			return "", false
		}
	}
	var b strings.Builder
	text := strings.ToValidUTF8(strings.TrimSpace(n.Text), "\uFFFD")
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '<':
			b.WriteString(`\u003c`)
		case c == '{' && i+2 < len(text) && text[i+1] >= '0' && text[i+1] <= '9' && text[i+2] == '}':
			k := int(text[i+1] - '0')
			if k >= len(n.Names) {
				return "", false
			}
			b.WriteString(QuoteName(tag, n.Names[k]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
