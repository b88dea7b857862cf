// The export of a conversation as Markdown (seed 000 "The chat bar",
// Export): for people to read — raw HTML escaped and no link can form
// (a script link stays text), the data tags stripped from the results,
// nothing of the key.

import { noteText, type Conversation } from "./conversation.js";

/** markdownSafe escapes what Markdown would turn into HTML or a link: & < > as entities, [ ] with a backslash. */
export function markdownSafe(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/([[\]\\])/g, "\\$1");
}

/** stripDataMarks removes the data tags around a result's JSON, and turns its \u003c escapes back into '<'. */
export function stripDataMarks(text: string, tag: string): string {
  return text.split(`<${tag}>`).join("").split(`</${tag}>`).join("").replace(/\\u003c/g, "<");
}

/** exportMarkdown writes the conversation as Markdown. */
export function exportMarkdown(c: Conversation, o: { provider: string; dataTag: string }): string {
  const out = [`# Conversation with ${markdownSafe(o.provider)}`, "", `Started ${new Date(c.createdAt).toISOString()}.`];
  const quote = (s: string) => s.split("\n").map((l) => "> " + l).join("\n");
  for (const e of c.entries) {
    out.push("");
    if (e.role === "user") out.push("**You:**", "", markdownSafe(e.text));
    else if (e.role === "assistant") {
      for (const p of e.parts) {
        if (p.type === "text" && p.text) out.push(`**${markdownSafe(o.provider)}:**`, "", markdownSafe(p.text));
        else if (p.type === "call") out.push(`*Called ${markdownSafe(p.name)}* with ${markdownSafe(JSON.stringify(p.arguments))}`);
      }
    } else if (e.role === "tool") {
      for (const r of e.results) out.push(`*Result of ${markdownSafe(r.name)}${r.isError ? " (failed)" : ""}:*`, "", quote(markdownSafe(stripDataMarks(r.text, o.dataTag))));
    } else out.push(`*${markdownSafe(noteText(e.note))}*`);
  }
  return out.join("\n") + "\n";
}
