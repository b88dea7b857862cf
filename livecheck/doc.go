// Package livecheck is `tabrelay live-check`: an MCP host of a deployed
// relay, with a real Chromium page of the app as the person's tab, that
// walks what a host and a person do — discovery, registration, PKCE, the
// approval in the page's <tabrelay-connect>, tool calls, the view card,
// a call with no tab, refresh-token rotation and reuse detection, and
// Forget in the page's <tabrelay-connections> — and prints one line per
// check: PASS, FAIL or SKIP, with why.
//
// It speaks to the relay only over its public HTTP routes and drives the
// page only through the SDK elements' documented data-part attributes
// (web/sdk/README.md), so it runs against any app that uses them. It must
// never print a token, a code, a connect code, a PKCE verifier or a
// state: every line goes through one redactor that knows each secret the
// run handled, and errors of the HTTP library, which quote URLs, are
// reworded before they reach it.
package livecheck
