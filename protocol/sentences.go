package protocol

import (
	"fmt"
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
func TabClosedSentence(appTitle string) string {
	return fmt.Sprintf("The %s tab running this call closed, and no tab of this browser came back, so the relay stopped waiting. "+
		"The call may or may not have run. If %s is opened again soon, the call may still run there. "+
		"Ask the person whether it ran before you call again.", appTitle, appTitle)
}

// DetachSentence answers a call whose wait ran out while the person was
// still being asked: the tab keeps the question open, the relay stops
// waiting (SPEC §3).
func DetachSentence() string {
	return "The person is being asked about this call in their tab and has not answered yet. " +
		"Do not call again: once they answered, read the history to see what happened."
}

// TimeoutSentence answers a call the tab did not answer within wait.
func TimeoutSentence(wait time.Duration) string {
	return fmt.Sprintf("The tab did not answer within %s, and the relay stopped waiting. "+
		"The call may still have run: read the history before you call again.", wait.Round(time.Second))
}

// RestartingSentence answers a call whose pairing cannot answer: its actor
// is restarting or its node is draining (SPEC §4).
func RestartingSentence() string {
	return "The relay is restarting this browser's connection and could not finish the call. " +
		"It may have run: read the history, then retry if it did not."
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
