// ask_person, the chat's own tool (seed 000 "The chat bar", Choices): the
// model asks the person one question with 2–5 choices, and the turn ends;
// the choices show as buttons above the message field, and the person's
// pick (or anything they type) is their next message. A connector does not
// list this tool.

import type { ChatTool } from "./contract.js";

export const ASK_PERSON = "ask_person";

export const ASK_PERSON_TOOL: ChatTool = {
  name: ASK_PERSON,
  description: "Asks the person one question with 2 to 5 short choices, shown as buttons; your turn ends, and their answer is their next message. Use it when you need the person to decide.",
  inputSchema: {
    type: "object",
    properties: {
      question: { type: "string", maxLength: 500, description: "The question, one sentence." },
      choices: { type: "array", items: { type: "string", maxLength: 200 }, minItems: 2, maxItems: 5, description: "2 to 5 short choices." },
    },
    required: ["question", "choices"],
    additionalProperties: false,
  },
};

/** A question of the model's, as the chat shows it. */
export interface Ask {
  readonly question: string;
  readonly choices: readonly string[];
}

/** askOf checks ask_person's arguments: a question of at most 500 characters and 2–5 distinct, non-empty choices of at most 200. */
export function askOf(args: Readonly<Record<string, unknown>>): Ask | string {
  const question = typeof args["question"] === "string" ? args["question"].trim() : "";
  const raw = args["choices"];
  if (!question) return "ask_person needs a question; nothing was asked.";
  if (question.length > 500) return "The question of ask_person must be one sentence (at most 500 characters); nothing was asked.";
  if (!Array.isArray(raw) || raw.length < 2 || raw.length > 5) return "ask_person needs 2 to 5 choices; nothing was asked.";
  const choices = raw.map((c) => (typeof c === "string" ? c.trim() : ""));
  if (choices.some((c) => !c || c.length > 200)) return "Each choice of ask_person must be a short text (at most 200 characters); nothing was asked.";
  if (new Set(choices).size !== choices.length) return "The choices of ask_person must differ; nothing was asked.";
  return { question, choices };
}

/** ASKED is what the model reads as ask_person's result. */
export const ASKED = "The question is shown to the person with its choices; their answer is their next message.";
