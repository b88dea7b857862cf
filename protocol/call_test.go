package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEncodeOutcome: what a host reads of each way a call can end. The
// tab's answer comes between the bundle's data tags; every other end is
// the relay's one sentence, an error but for a detach, which is news.
func TestEncodeOutcome(t *testing.T) {
	b := ProbeBundle()
	for _, tc := range []struct {
		o       Outcome
		want    string
		isError bool
	}{
		{Outcome{Kind: Answered, Result: TabResult{Data: json.RawMessage(`{"n":1}`)}}, "<" + b.Tag() + ">", false},
		{Outcome{Kind: Answered, Result: TabResult{Error: "The counter is locked."}}, "The counter is locked.", true},
		{Outcome{Kind: NoTab}, NoTabSentence(b.App.Title), true},
		{Outcome{Kind: Detached}, DetachSentence(b.AnswersAt), false},
		{Outcome{Kind: TimedOut, Wait: 225 * time.Second}, TimeoutSentence(225*time.Second, b.AnswersAt), true},
		{Outcome{Kind: Restarting}, RestartingSentence(b.AnswersAt), true},
		{Outcome{Kind: TooManyCalls, Limit: 64}, TooManyCallsSentence(64), true},
		{Outcome{Kind: Cancelled}, CancelledSentence(), true},
		{Outcome{Kind: TabClosed}, TabClosedSentence(b.App.Title, b.AnswersAt), true},
	} {
		t.Run(tc.o.Kind.String(), func(t *testing.T) {
			r := EncodeOutcome(b, tc.o)
			if len(r.Content) == 0 || r.Content[0].Type != "text" || !strings.Contains(r.Content[0].Text, tc.want) || r.IsError != tc.isError {
				t.Fatalf("%+v encoded as %+v, want text with %q, isError %v", tc.o, r, tc.want, tc.isError)
			}
		})
	}
}
