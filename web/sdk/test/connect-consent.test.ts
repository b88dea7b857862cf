// The Connect panel against consent phishing (issue 23), on the DOM
// stand-in: a link's code is read once at load and looked up only on the
// person's click; its approval goes through the relay's confirm window,
// opened in the click; a typed code says who gets it is unknown, where
// the request started, and asks a second time.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConnectInfo, ScopeEntry } from "../src/requests.js";
import { connectInfoOf } from "../src/requests.js";
import { app } from "./app.js";
import { doc, type FakeNode } from "./dom.js";

// The page loads with an approval link's fragment.
let hash = "#tabrelay-connect=KQ7M-2XDP";
const replaced: string[] = [];
Object.assign(globalThis, {
  location: { get href() { return "https://app.example/" + hash; }, get hash() { return hash; } },
  history: { state: null, replaceState: (_: unknown, __: string, url: string) => { replaced.push(url); hash = ""; } },
});
const opened: { url: string; name: string; win: { closed: boolean; location: { href: string }; close(): void } }[] = [];
Object.assign((globalThis as unknown as { window: object }).window, {
  open: (url: string, name: string) => {
    const win = { closed: false, location: { href: url }, close() { this.closed = true; } };
    opened.push({ url, name, win });
    return win;
  },
});

const { TabrelayConnect, CONFIRM_POLL_MS } = await import("../src/ui/connect.js");
const { en: { connect: words } } = await import("../src/ui/messages-en.js");

const info = (more: Record<string, unknown> = {}): ConnectInfo => connectInfoOf({
  client: "Claude", clientKind: "registered", redirectHost: "claude.ai", requestedScope: null,
  expiresAt: Date.now() + 600_000, startedAt: Date.now(), device: "Chrome on Linux", sameAddress: true, crossDevice: true, state: "pending", ...more,
});

class FakeClient {
  readonly app = app;
  asked: string[] = [];
  approved: { code: string; scope: readonly ScopeEntry[]; via: string }[] = [];
  answers: ConnectInfo[] = [];
  async connectInfo(code: string) {
    this.asked.push(code);
    return this.answers.shift() ?? info();
  }
  async approve(code: string, scope: readonly ScopeEntry[]) {
    this.approved.push({ code, scope, via: "typed" });
    return { id: "conn_1", client: "Claude", host: "claude.ai", createdAt: 0, lastUsedAt: 0, scope: [...scope] };
  }
  async approveLink(code: string, scope: readonly ScopeEntry[]) {
    this.approved.push({ code, scope, via: "link" });
    return "https://relay.example/authorize/status/req_1/confirm#handle";
  }
  async decline() {}
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const part = (el: FakeNode, name: string) => el.querySelector(`[data-part=${name}]`)!;
const submit = (form: FakeNode) => form.dispatch("submit", { preventDefault() {} });

function panel(client: FakeClient): FakeNode {
  const el = new TabrelayConnect() as unknown as FakeNode & { client: FakeClient; connectedCallback(): void };
  doc.body.append(el);
  el.client = client;
  el.connectedCallback();
  return el;
}

test("a link's code is read once at load, shown, and looked up only on the person's click", async () => {
  const client = new FakeClient();
  const el = panel(client);
  await tick();
  assert.deepEqual(client.asked, [], "nothing is looked up before the person asks");
  assert.equal((part(el, "code") as unknown as { value: string }).value, "KQ7M-2XDP");
  assert.deepEqual(replaced, ["https://app.example/"], "the code leaves the address bar");
  assert.match(part(el, "result").textContent, /Press Continue/);

  // A page of another origin that opened this one changes the fragment: nothing happens.
  hash = "#tabrelay-connect=ZZZZ-ZZZZ";
  const other = panel(client);
  await tick();
  assert.deepEqual(client.asked, []);
  assert.equal((part(other, "code") as unknown as { value: string }).value ?? "", "");
  other.remove();

  submit(part(el, "code-form"));
  await tick();
  assert.deepEqual(client.asked, ["KQ7M-2XDP"]);
  assert.equal(part(el, "warning").textContent, words.linkNote);
  assert.doesNotMatch(part(el, "redirect").textContent, /who gets/);

  // Approve opens the relay's window in the click, then sends it to the confirm page.
  (el.querySelector("input[data-tool=echo]") as unknown as { checked: boolean; dispatch(t: string): void }).checked = true;
  (el.querySelector("input[data-tool=echo]") as unknown as { dispatch(t: string): void }).dispatch("change");
  client.answers.push(info({ state: "declined", reason: "other-browser" }));
  submit(part(el, "decide-form"));
  assert.equal(opened.length, 1, "the window opens in the click, before any answer");
  assert.equal(opened[0]!.url, "");
  await tick();
  assert.deepEqual(client.approved.map((a) => a.via), ["link"]);
  assert.equal(opened[0]!.win.location.href, "https://relay.example/authorize/status/req_1/confirm#handle");
  assert.equal(part(el, "result").textContent.startsWith(words.waiting), true);
  await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS + 200));
  assert.equal(part(el, "error").textContent, words.otherBrowser, "the person reads why nothing was connected");
  const asked = client.asked.length;
  await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS + 200));
  assert.equal(client.asked.length, asked, "the panel stops asking once the request is decided");
  el.remove();
});

test("a typed code shows where the request started and asks a second time", async () => {
  const client = new FakeClient();
  const el = panel(client);
  (el as unknown as { show(code: string): void }).show("ABCD-EFGH");
  await tick();
  assert.match(part(el, "warning").textContent, /cannot tell who will get this connection/);
  assert.match(part(el, "provenance").textContent, /from Chrome on Linux, from the same network address as this browser/);
  (el.querySelector("input[data-tool=echo]") as unknown as { checked: boolean }).checked = true;
  (el.querySelector("input[data-tool=echo]") as unknown as { dispatch(t: string): void }).dispatch("change");
  const before = opened.length;
  submit(part(el, "decide-form"));
  await tick();
  assert.equal(client.approved.length, 0, "one press does not approve a typed code");
  assert.equal((part(el, "second") as unknown as { hidden: boolean }).hidden, false);
  part(el, "approve-typed").dispatch("click");
  await tick();
  assert.deepEqual(client.approved.map((a) => a.via), ["typed"]);
  assert.equal(opened.length, before, "a typed code opens no window");
  assert.match(part(el, "result").textContent, /is connected/);
});
