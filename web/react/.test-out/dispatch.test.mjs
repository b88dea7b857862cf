// test/dispatch.test.ts
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { createElement } from "react";
import { renderToString } from "react-dom/server";
import { defineApp } from "@tabrelay/tab";

// ../sdk/test/fakes.ts
function flush() {
  return new Promise((resolve) => setImmediate(resolve));
}
var FakeClock = class {
  t = 17672256e5;
  seq = 0;
  timers = [];
  now = () => this.t;
  setTimeout = (fn, ms) => {
    const timer = { at: this.t + Math.max(0, ms), seq: ++this.seq, fn };
    this.timers.push(timer);
    return timer;
  };
  clearTimeout = (id) => {
    this.timers = this.timers.filter((t) => t !== id);
  };
  /** pending returns the delays of the timers still waiting, soonest first. */
  pending() {
    return this.timers.map((t) => t.at - this.t).sort((a, b) => a - b);
  }
  /** advance moves time on by ms, running each timer due on the way, in order. */
  async advance(ms) {
    const end = this.t + ms;
    for (; ; ) {
      await flush();
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
    await flush();
  }
};
var FakeSocket = class {
  constructor(url) {
    this.url = url;
  }
  url;
  readyState = 0;
  onopen = null;
  onmessage = null;
  onclose = null;
  onerror = null;
  frames = [];
  closedByTab;
  send(data) {
    if (this.readyState !== 1) throw new Error("InvalidStateError: not open");
    this.frames.push(data);
  }
  close(code) {
    this.closedByTab = code ?? 1005;
    this.readyState = 3;
  }
  /** sent returns the messages the tab sent, parsed; of a type when given. */
  sent(type) {
    const all = this.frames.map((f) => JSON.parse(f));
    return type ? all.filter((m) => m["type"] === type) : all;
  }
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  /** receive delivers a frame from the relay: an object is sent as JSON. */
  receive(msg) {
    this.onmessage?.({ data: typeof msg === "string" ? msg : JSON.stringify(msg) });
  }
  /** welcome opens the socket and welcomes its hello. */
  welcome(pingIntervalMs = 25e3) {
    this.open();
    this.receive({ type: "welcome", protocol: 1, pairing: "ptest", pingIntervalMs, maxMessageBytes: 16 << 20 });
  }
  /** end closes the socket from the relay's side (code 1006: no close frame). */
  end(code = 1006, reason = "") {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
};
var FakeRelay = class {
  sockets = [];
  WebSocket;
  constructor() {
    const sockets = this.sockets;
    this.WebSocket = class extends FakeSocket {
      constructor(url) {
        super(url);
        sockets.push(this);
      }
    };
  }
  get last() {
    const s = this.sockets[this.sockets.length - 1];
    if (!s) throw new Error("the tab dialed no socket");
    return s;
  }
};
var MemoryStorage = class {
  constructor(quota = Infinity) {
    this.quota = quota;
  }
  quota;
  items = /* @__PURE__ */ new Map();
  get length() {
    return this.items.size;
  }
  key(i) {
    return [...this.items.keys()][i] ?? null;
  }
  getItem(key) {
    return this.items.get(key) ?? null;
  }
  setItem(key, value) {
    let size = key.length + value.length;
    for (const [k, v] of this.items) if (k !== key) size += k.length + v.length;
    if (size > this.quota) throw new Error("QuotaExceededError");
    this.items.set(key, value);
  }
  removeItem(key) {
    this.items.delete(key);
  }
};
var SharedLocks = class {
  held = /* @__PURE__ */ new Map();
  forTab(tab) {
    return {
      request: async (name, _o, cb) => {
        if (this.held.has(name)) return cb(null);
        this.held.set(name, tab);
        try {
          return await cb({ name });
        } finally {
          if (this.held.get(name) === tab) this.held.delete(name);
        }
      }
    };
  }
  /** closeTab releases the locks of a tab that closed: the browser does that. */
  closeTab(tab) {
    for (const [name, owner] of this.held) if (owner === tab) this.held.delete(name);
  }
};
var FakePage = class {
  focused = false;
  listener;
  hasFocus() {
    return this.focused;
  }
  onFocus(listener) {
    this.listener = listener;
    return () => this.listener = void 0;
  }
  online;
  onOnline(listener) {
    this.online = listener;
    return () => this.online = void 0;
  }
  /** goOnline plays the browser's network coming back. */
  goOnline() {
    this.online?.();
  }
  /** focus plays the person clicking into the tab. */
  focus() {
    this.focused = true;
    this.listener?.();
  }
};

// src/index.ts
import { useEffect, useRef, useSyncExternalStore } from "react";
import {
  TabClient,
  ToolError
} from "@tabrelay/tab";
var NO_HANDLER = (tool) => `The tab cannot run ${tool} now: the part of the page that answers it is not open. Ask the person to open it, or try another tool.`;
var IDLE = { state: "idle" };
function createTabrelay(options) {
  const registered = /* @__PURE__ */ new Map();
  let made;
  const client = () => made ??= makeClient(options, registered);
  const subscribe = (listener) => client().onStatus(listener);
  const snapshot = () => client().status;
  const server = () => IDLE;
  const connect = () => client().start();
  const disconnect = () => client().stop();
  return {
    get client() {
      return client();
    },
    useTabrelay() {
      const status = useSyncExternalStore(subscribe, snapshot, server);
      return { status, client: client(), connect, disconnect };
    },
    useToolHandler(tool, handler) {
      const ref = useRef(handler);
      ref.current = handler;
      useEffect(() => {
        client();
        const stack = registered.get(tool) ?? [];
        registered.set(tool, stack);
        stack.push(ref);
        return () => {
          stack.splice(stack.indexOf(ref), 1);
        };
      }, [tool]);
    }
  };
}
function makeClient(options, registered) {
  const handlers = {};
  for (const t of options.app.tools) {
    handlers[t.name] = (call) => {
      const stack = registered.get(t.name);
      const h = stack?.[stack.length - 1]?.current;
      if (h === void 0) throw new ToolError(NO_HANDLER(t.name));
      if (typeof h === "function") return h(call);
      const per = h[call.action ?? ""];
      if (per === void 0) throw new ToolError(NO_HANDLER(`${t.name} (${call.action ?? "no action"})`));
      return per(call);
    };
  }
  return new TabClient({ ...options, handlers });
}

// test/dispatch.test.ts
var app = defineApp({
  version: "t-1",
  app: { name: "t", title: "T" },
  instructions: "Test tools.",
  tools: [{ name: "find", description: "Finds.", result: "cells", inputSchema: { type: "object" } }]
});
function fixture() {
  const relay = new FakeRelay(), clock = new FakeClock();
  const environment = {
    WebSocket: relay.WebSocket,
    now: clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5,
    randomBytes: (b) => b.fill(7),
    localStorage: new MemoryStorage(),
    locks: new SharedLocks().forTab("tab1"),
    page: new FakePage(),
    warn: () => {
    }
  };
  return { relay, clock, tabrelay: createTabrelay({ relay: "https://relay.test", app, environment }) };
}
test("a call for a tool no mounted component answers gets an error result that says so", async () => {
  const { relay, clock, tabrelay } = fixture();
  tabrelay.client.start();
  relay.last.welcome();
  relay.last.receive({
    type: "call",
    id: "c1",
    tool: "find",
    arguments: {},
    deadline: clock.t + 6e4,
    turn: "t1",
    connection: { id: "k1", kind: "oauth", client: "Host", host: "host.test" }
  });
  for (let i = 0; i < 20 && relay.last.sent("result").length === 0; i++) await flush();
  const [result] = relay.last.sent("result");
  assert.ok(result, "the call got no result");
  assert.equal(result["id"], "c1");
  assert.match(JSON.stringify(result), new RegExp(NO_HANDLER("find").slice(0, 40)));
  tabrelay.client.stop();
});
test("a server render shows the idle status and opens no socket", () => {
  const { relay, tabrelay } = fixture();
  const Status = () => createElement("p", null, tabrelay.useTabrelay().status.state);
  assert.equal(renderToString(createElement(Status)), "<p>idle</p>");
  assert.equal(relay.sockets.length, 0);
});
