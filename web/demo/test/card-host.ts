// card-host is an MCP Apps host's side for the view card's browser test
// (tests/demo_card_test.go): the package's own AppBridge over a
// PostMessageTransport into the card's iframe. The card's tool calls go to
// the host's backend (POST /call on the page's origin), which, as a real
// host's server does, calls the relay with its token; links the card asks
// to open are recorded. Bundled by the test with esbuild.

import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

interface CardHost {
  /** Links the card asked the host to open. */
  opened: string[];
  /** Tool calls the card made through the host. */
  calls: string[];
  /** Whether the card initialized. */
  ready: boolean;
}

declare global {
  interface Window {
    cardHost: CardHost;
    /** show loads the card's HTML in an iframe and hands it the first tool result. */
    showCard(html: string, first: unknown): Promise<void>;
  }
}

window.cardHost = { opened: [], calls: [], ready: false };

window.showCard = async (html, first) => {
  const iframe = document.createElement("iframe");
  iframe.title = "Notes board card";
  // The card's document shares this page's origin so that the test can
  // press its buttons; hosts give cards an origin of their own.
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin");
  iframe.srcdoc = html;
  iframe.style.cssText = "width: 720px; height: 560px; border: 1px solid #888";
  const loaded = new Promise((resolve) => iframe.addEventListener("load", resolve, { once: true }));
  document.body.append(iframe);
  await loaded;

  const bridge = new AppBridge(null, { name: "tabrelay-card-test-host", version: "1.0.0" }, { openLinks: {}, serverTools: {} });
  bridge.oncalltool = async (params) => {
    window.cardHost.calls.push(params.name);
    const res = await fetch("/call", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
    if (!res.ok) throw new Error(`the host's backend answered ${res.status}`);
    return await res.json();
  };
  bridge.onopenlink = async ({ url }) => {
    window.cardHost.opened.push(url);
    return {};
  };
  bridge.oninitialized = () => {
    window.cardHost.ready = true;
    void bridge.sendToolInput({ arguments: {} }).then(() => bridge.sendToolResult(first as Parameters<AppBridge["sendToolResult"]>[0]));
  };
  const win = iframe.contentWindow;
  if (!win) throw new Error("the card's iframe has no window");
  await bridge.connect(new PostMessageTransport(win, win));
};
