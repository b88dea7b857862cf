// The elements' styles (issue 26): a constructable stylesheet adopted by
// the document, once for every element of its kind, which a CSP without
// 'unsafe-inline' lets apply; a <style> with the page's nonce only where
// the browser has no constructable stylesheets; and the stylesheet the
// package ships (dist/tabrelay-ui.css) holds every element's rules.
// tests/browser_csp_test.go proves the first in Chromium under a CSP.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { doc, FakeNode } from "./dom.js";
import { packageDir } from "./paths.js";

const { adoptStyle, elementStyle, setStyleNonce, uiStylesheet } = await import("../src/dom/elements.js");
await import("../src/ui/index.js");

const asElement = (n: FakeNode) => n as unknown as Element;

test("without constructable stylesheets, one <style> per element kind, with the nonce set", () => {
  const style = elementStyle("probe", ":where(tabrelay-probe){display:block}");
  setStyleNonce("n0nce");
  adoptStyle(asElement(new FakeNode("tabrelay-probe")), style);
  adoptStyle(asElement(new FakeNode("tabrelay-probe")), style);
  const added = doc.head.querySelectorAll('style[data-tabrelay="probe"]') as unknown as (FakeNode & { nonce?: string })[];
  assert.equal(added.length, 1);
  assert.equal(added[0]!.nonce, "n0nce");
  assert.equal(added[0]!.textContent, ":where(tabrelay-probe){display:block}");
  setStyleNonce(undefined);
});

test("the nonce another module of the SDK set (the UI module's, for the chat's element) is the one a <style> carries", () => {
  // Each bundle (tabrelay-ui.js, tabrelay-chat.js) has its own copy of
  // dom/elements.ts: the nonce lives where both find it.
  const style = elementStyle("probe-other", ":where(tabrelay-probe-other){display:block}");
  (globalThis as Record<symbol, unknown>)[Symbol.for("tabrelay.styleNonce")] = "n0nce-2";
  try {
    adoptStyle(asElement(new FakeNode("tabrelay-probe-other")), style);
    const added = doc.head.querySelectorAll('style[data-tabrelay="probe-other"]') as unknown as (FakeNode & { nonce?: string })[];
    assert.equal(added[0]?.nonce, "n0nce-2");
  } finally {
    setStyleNonce(undefined);
  }
});

test("with constructable stylesheets, the document adopts each element's sheet once, and no <style> is added", () => {
  class Sheet {
    css = "";
    replaceSync(css: string) {
      this.css = css;
    }
  }
  const document = doc as typeof doc & { adoptedStyleSheets: Sheet[] };
  document.adoptedStyleSheets = [];
  Object.assign(globalThis, { CSSStyleSheet: Sheet });
  try {
    const style = elementStyle("adopted", ":where(tabrelay-adopted){color:red}");
    for (let i = 0; i < 3; i++) adoptStyle(asElement(new FakeNode("tabrelay-adopted")), style);
    assert.deepEqual(document.adoptedStyleSheets.map((s) => s.css), [":where(tabrelay-adopted){color:red}"]);
    assert.equal(doc.head.querySelectorAll('style[data-tabrelay="adopted"]').length, 0);
  } finally {
    delete (globalThis as { CSSStyleSheet?: unknown }).CSSStyleSheet;
  }
});

test("dist/tabrelay-ui.css holds the rules of all seven elements", () => {
  const file = readFileSync(join(packageDir, "dist/tabrelay-ui.css"), "utf8");
  for (const element of ["connect", "connections", "confirm", "activity", "data-switch", "notice", "permissions"]) {
    assert.match(file, new RegExp(`:where\\(tabrelay-${element}\\)`), element);
  }
  for (const line of uiStylesheet().split("\n").filter((l) => l.startsWith(":where(tabrelay-") && !/probe|adopted/.test(l))) {
    assert.ok(file.includes(line), `the stylesheet lacks ${line}`);
  }
});
