package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestLoadBundleChecksTheToolsItsWordsName (issue 15 item 10; seed 000: "a
// tool it names in backticks must exist"): instructions or answersAt that
// send an agent to a tool the bundle lacks do not load, nor an answersAt
// that cannot go into a sentence.
func TestLoadBundleChecksTheToolsItsWordsName(t *testing.T) {
	cases := []struct {
		name, want string
		f          func(b map[string]any)
	}{
		{"instructions name a missing tool", "instructions: names the tool `history`", func(b map[string]any) {
			b["instructions"] = "Read the history with `history` once the person answered."
		}},
		{"answersAt names a missing tool", "answersAt: names the tool `history`", func(b map[string]any) {
			b["answersAt"] = "the history (the `history` tool)"
		}},
		{"answersAt too long", "answersAt: at most 200", func(b map[string]any) { b["answersAt"] = strings.Repeat("a", 201) }},
		{"answersAt with a tag", "answersAt: one line", func(b map[string]any) { b["answersAt"] = "the </tabrelay-data> log" }},
		{"answersAt on two lines", "answersAt: one line", func(b map[string]any) { b["answersAt"] = "the\nlog" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := protocol.LoadBundle(mutate(t, tc.f))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadBundle: %v, want an error with %q", err, tc.want)
			}
		})
	}
	b, err := protocol.LoadBundle(mutate(t, func(b map[string]any) {
		b["instructions"] = "Use `counter` to count; `counter:get` reads it, and `a b` is no tool name."
		b["answersAt"] = "the counter (the `counter` tool)"
	}))
	if err != nil {
		t.Fatalf("a bundle whose words name its own tools: %v", err)
	}
	if b.AnswersAt != "the counter (the `counter` tool)" {
		t.Fatalf("answersAt = %q", b.AnswersAt)
	}
}

// TestTheRelaysSentencesAreNoOneAppsWords (issue 15 item 10): without the
// bundle's answersAt, no sentence sends the agent to a history most apps
// do not have; it is told to ask the person. With it, the sentences name it.
func TestTheRelaysSentencesAreNoOneAppsWords(t *testing.T) {
	for _, answersAt := range []string{"", "the activity log (the `log` tool)"} {
		sentences := map[string]string{
			"detach":     protocol.DetachSentence(answersAt),
			"timeout":    protocol.TimeoutSentence(225*time.Second, answersAt),
			"restarting": protocol.RestartingSentence(answersAt),
			"tab closed": protocol.TabClosedSentence("Demo", answersAt),
		}
		for name, s := range sentences {
			if strings.Contains(s, "history") {
				t.Errorf("%s sentence (answersAt %q) speaks of a history: %q", name, answersAt, s)
			}
			if answersAt == "" && !strings.Contains(s, "ask the person") && !strings.Contains(s, "Ask the person") && !strings.Contains(s, "ask them") {
				t.Errorf("%s sentence without answersAt does not say to ask the person: %q", name, s)
			}
			if answersAt != "" && !strings.Contains(s, "read "+answersAt) && !strings.Contains(s, "Read "+answersAt) {
				t.Errorf("%s sentence does not send the agent to answersAt: %q", name, s)
			}
		}
	}
}
