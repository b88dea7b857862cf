package tests

import (
	"os"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// sdkBenchPage runs the SDK (the built dist/ modules, served from the
// page's own origin as a bundled app's) against a relay played by the
// page itself: its WebSocket is a stand-in that welcomes the tab and
// hands it call frames, so a call's time in the page is the SDK's own —
// the frame parsed and checked, the permission decision, the
// at-most-once record (localStorage and a Web Lock), the handler, the
// result encoded and sent — with no network and no relay.
//
// window.bench(variant, n) runs n calls one after the other and returns
// the milliseconds they took (the records are cleared every 200 calls,
// outside the time). The variants take one part away at a time:
//
//	full         the person's permissions (createPermissions), localStorage, Web Locks, a small result
//	no-gate      without the permissions
//	no-locks     and without Web Locks (the record alone claims the call)
//	memory       and an in-memory storage instead of localStorage
//	rows         full, with a result of 100 rows (about 6 KB of JSON)
//
// and window.lockAlone(n) times n Web Lock requests alone (web-lock).
const sdkBenchPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sdk bench</title></head><body>
<script type="module">
import { TabClient, defineApp } from "./tabrelay.js";
import { createPermissions } from "./tabrelay-ui.js";
const app = defineApp({ version: "probe-1", app: { name: "probe", title: "Probe" }, instructions: "A benchmark.",
  tools: [{ name: "echo", description: "Echoes.", inputSchema: { type: "object" }, result: "summaries", permissions: ["change"] }] });
const rows = Array.from({ length: 100 }, (_, i) => ({ id: "row-" + i, title: "Row number " + i, done: i % 2 === 0 }));
const waiting = new Map();
let lastSocket;
class Socket {
  readyState = 0; onopen = null; onmessage = null; onclose = null; onerror = null;
  constructor() {
    lastSocket = this;
    setTimeout(() => {
      this.readyState = 1;
      this.onopen?.({});
      this.onmessage?.({ data: JSON.stringify({ type: "welcome", protocol: 1, pairing: "pbench", pingIntervalMs: 25000, maxMessageBytes: 16 << 20 }) });
    });
  }
  send(frame) {
    if (!frame.startsWith('{"type":"result"')) return;
    const id = /"id":"([^"]+)"/.exec(frame)[1];
    waiting.get(id)?.();
    waiting.delete(id);
  }
  close() { this.readyState = 3; }
}
class Memory {
  m = new Map();
  get length() { return this.m.size; }
  key(i) { return [...this.m.keys()][i] ?? null; }
  getItem(k) { return this.m.get(k) ?? null; }
  setItem(k, v) { this.m.set(k, String(v)); }
  removeItem(k) { this.m.delete(k); }
}
const variants = {
  full: { gate: true, locks: true, storage: "local", rows: false },
  "no-gate": { gate: false, locks: true, storage: "local", rows: false },
  "no-locks": { gate: false, locks: false, storage: "local", rows: false },
  memory: { gate: false, locks: false, storage: "memory", rows: false },
  rows: { gate: true, locks: true, storage: "local", rows: true },
};
const clients = {};
let seq = 0;
async function client(name) {
  if (clients[name]) return clients[name];
  const v = variants[name];
  const prefix = "bench-" + name;
  const storage = v.storage === "memory" ? new Memory() : localStorage;
  const tab = new TabClient({
    relay: "wss://relay.invalid", app, storagePrefix: prefix,
    handlers: { echo: (call) => (v.rows ? rows : { echoed: call.arguments.value ?? null }) },
    ...(v.gate ? { permissions: createPermissions({ app }) } : {}),
    environment: { WebSocket: Socket, localStorage: storage, ...(v.locks ? {} : { locks: null }) },
  });
  await new Promise((resolve) => { const off = tab.onStatus((s) => { if (s.state === "connected") { resolve(); queueMicrotask(() => off()); } }); tab.start(); });
  const socket = lastSocket;
  const clear = () => { for (let i = storage.length - 1; i >= 0; i--) { const k = storage.key(i); if (k && k.startsWith(prefix + ":call:")) storage.removeItem(k); } };
  return (clients[name] = { tab, socket, clear });
}
window.bench = async (name, n) => {
  const c = await client(name);
  let total = 0;
  for (let done = 0; done < n; ) {
    c.clear();
    const batch = Math.min(200, n - done);
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) {
      const id = "call-" + (++seq);
      const answered = new Promise((resolve) => waiting.set(id, resolve));
      c.socket.onmessage({ data: JSON.stringify({ type: "call", id, tool: "echo", arguments: { value: i },
        connection: { id: "conn_1", kind: "connector", client: "Bench", host: "bench.example" },
        turn: "turn-" + name, deadline: Date.now() + 600000 }) });
      await answered;
    }
    total += performance.now() - t0;
    done += batch;
  }
  return total;
};
// The browser's own cost of what the record does with a Web Lock: one
// request of a fresh name, if available, around an async callback.
window.lockAlone = async (n) => {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await navigator.locks.request("bench-lock-" + (++seq), { ifAvailable: true }, async () => {});
  return performance.now() - t0;
};
window.ready = true;
</script></body></html>`

// BenchmarkChromiumSDKPerCall is the SDK's own cost of a call in
// Chromium (issue 26): the page's time from a call frame to its result
// frame, per call, for each variant of sdkBenchPage. Its figures are in
// docs/BENCHMARKS.md ("The SDK's own cost of a call").
func BenchmarkChromiumSDKPerCall(b *testing.B) {
	core, err := os.ReadFile("../web/sdk/dist/tabrelay.js")
	if err != nil {
		b.Fatal(err)
	}
	ui, err := os.ReadFile("../web/sdk/dist/tabrelay-ui.js")
	if err != nil {
		b.Fatal(err)
	}
	site := appSite(b, map[string]string{"/": sdkBenchPage, "/tabrelay.js": string(core), "/tabrelay-ui.js": string(ui)})
	page := chromium(b)
	if err := chromedp.Do(page, chromedp.Navigate(site+"/")); err != nil {
		b.Fatal(err)
	}
	eventually(b, func() bool {
		ready, _ := chromedp.Run(page, chromedp.Evaluate[bool](`window.ready === true`))
		return ready
	}, "the benchmark page loads")
	for _, variant := range []string{"full", "no-gate", "no-locks", "memory", "rows", "web-lock"} {
		run := func(n int) string { return `bench(` + jsString(variant) + `, ` + strconv.Itoa(n) + `)` }
		if variant == "web-lock" {
			run = func(n int) string { return `lockAlone(` + strconv.Itoa(n) + `)` }
		}
		b.Run(variant, func(b *testing.B) {
			// A first round outside the time: the client connects, the code warms.
			if _, err := chromedp.Run(page, chromedp.Evaluate[float64](run(200), chromedp.EvalAwaitPromise)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			ms, err := chromedp.Run(page, chromedp.Evaluate[float64](run(b.N), chromedp.EvalAwaitPromise))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(ms*1e6/float64(b.N), "page-ns/call")
		})
	}
}
