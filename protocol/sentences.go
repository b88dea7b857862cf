package protocol

import (
	"fmt"
	"strings"
	"time"
)

// The relay's own sentences: what an agent reads when a call ends without
// the tab's result. They follow the data tags' rules (SPEC §4): a name they
// quote is marked with QuoteName by the caller; these take none from outside.

// NoTabSentence answers a call when no tab of the browser is connected:
// nothing waits (SPEC §3).
func NoTabSentence(appTitle string) string {
	return fmt.Sprintf("No %s tab of this browser is connected to the relay, so nothing ran. "+
		"Ask the person to open %s in a tab of the browser they approved this connection in, then call again.",
		appTitle, appTitle)
}

// TabClosedSentence answers a call whose tab closed while it had the call,
// when no tab of the browser came back within the tab grace (SPEC §3). The
// relay keeps the call until its deadline for a tab that opens again.
// answersAt is the bundle's AnswersAt.
func TabClosedSentence(appTitle, answersAt string) string {
	return fmt.Sprintf("The %s tab running this call closed, and no tab of this browser came back, so the relay stopped waiting. "+
		"The call may or may not have run. If %s is opened again soon, the call may still run there. %s",
		appTitle, appTitle, checkFirst(answersAt, "whether it ran", "before you call again."))
}

// DetachSentence answers a call whose wait ran out while the person was
// still being asked: the tab keeps the question open, the relay stops
// waiting (SPEC §3).
func DetachSentence(answersAt string) string {
	if answersAt == "" {
		return "The person is being asked about this call in their tab and has not answered yet. " +
			"Do not call again: once they answered, ask them what they decided."
	}
	return "The person is being asked about this call in their tab and has not answered yet. " +
		"Do not call again: once they answered, read " + answersAt + " to see what happened."
}

// TimeoutSentence answers a call the tab did not answer within wait.
func TimeoutSentence(wait time.Duration, answersAt string) string {
	return fmt.Sprintf("The tab did not answer within %s, and the relay stopped waiting. The call may still have run: %s",
		wait.Round(time.Second), lowerFirst(checkFirst(answersAt, "whether it ran", "before you call again.")))
}

// RestartingSentence answers a call whose pairing cannot answer: its actor
// is restarting or its node is draining (SPEC §4).
func RestartingSentence(answersAt string) string {
	return "The relay is restarting this browser's connection and could not finish the call. It may have run: " +
		lowerFirst(checkFirst(answersAt, "whether it did", "then retry if it did not."))
}

// checkFirst tells the agent how to learn what a call did before it acts
// again: read the bundle's place for it, or, when the app has none, ask the
// person (most apps have no history an agent can read).
func checkFirst(answersAt, what, then string) string {
	if answersAt == "" {
		return "Ask the person " + what + ", " + then
	}
	return "Read " + answersAt + ", " + then
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// TooManyCallsSentence answers a call over the pairing's limit of calls in
// flight.
func TooManyCallsSentence(limit int) string {
	return fmt.Sprintf("This browser already has %d calls in flight, the most the relay allows. "+
		"Wait for some to finish, then call again.", limit)
}

// CancelledSentence is the record of a call whose host went away.
func CancelledSentence() string {
	return "The call was cancelled before the tab answered."
}

// Clip shortens s, something from outside quoted in a sentence or a log
// line, to n runes, marking a cut with "…"; what is not UTF-8 is dropped.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	for i := range s {
		if n == 0 {
			return s[:i] + "…"
		}
		n--
	}
	return s
}
