// Type-checked, never run (scripts/consumer.mjs, `npm run check`): the
// German as an app imports it from its own entry, a table adjusted from
// it, and a table declared complete that lacks an entry, which must not
// compile.

import { en, setMessages, statusWords, type Messages } from "@tabrelay/tab/ui";
import { de } from "@tabrelay/tab/ui/de";

setMessages(de);
setMessages({ ...de, connect: { ...de.connect, approve: "Verbinden" } });
export const said: string = statusWords({ state: "connecting" });

const { dataSwitch: _left, ...lacking } = en;
// @ts-expect-error: a table declared as Messages has every entry (this one lacks dataSwitch).
export const incomplete: Messages = lacking;
// @ts-expect-error: a sentence with a count is a function of it.
export const wrong: Messages = { ...en, activity: { ...en.activity, steps: "steps" } };
