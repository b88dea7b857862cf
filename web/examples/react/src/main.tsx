// A small React app whose tab agents reach through a tabrelay relay, with
// @tabrelay/react: the page's client and hooks from createTabrelay, the
// tools answered by the components that hold the state (useToolHandler),
// and the six elements of @tabrelay/tab/ui in JSX, their properties set by
// React. tests/browser_react_test.go connects it in Chromium and calls it
// from an MCP host.

import "@tabrelay/tab/ui"; // defines the elements before the first render: React sets properties only on defined ones
import { ToolError } from "@tabrelay/tab";
import { createPermissions } from "@tabrelay/tab/ui";
import { createTabrelay } from "@tabrelay/react";
import { StrictMode, useEffect, useState, type FormEvent } from "react";
import { createRoot } from "react-dom/client";
import { app } from "./tools.js";

/** The relay: the page's own origin, unless <meta name="tabrelay-relay"> names another. */
const relay = document.querySelector<HTMLMetaElement>('meta[name="tabrelay-relay"]')?.content.trim() || location.origin;
const permissions = createPermissions({ app });
const { client, useTabrelay, useToolHandler } = createTabrelay({ relay, app, permissions });

interface Todo {
  readonly title: string;
  readonly done: boolean;
}

function Status() {
  const { status, connect } = useTabrelay();
  const words = status.state === "stopped" ? status.message
    : status.state === "reconnecting" ? `reconnecting in ${status.seconds} s` : status.state;
  return (
    <p id="status" role="status" data-state={status.state}>
      Agents: {words}
      {status.state === "stopped" && <button type="button" onClick={connect}>Connect again</button>}
    </p>
  );
}

function Todos() {
  const [todos, setTodos] = useState<readonly Todo[]>([{ title: "Water the plants", done: false }]);
  const [draft, setDraft] = useState("");
  useToolHandler("list_todos", () => todos.map((t) => ({ title: t.title, done: t.done })));
  useToolHandler("add_todo", (call) => {
    // A string by its type (the schema's); neither the SDK nor the relay checks that an agent sent one.
    const title: unknown = call.arguments.title;
    if (typeof title !== "string" || title.trim() === "") throw new ToolError("The title is empty: give the todo a title.");
    setTodos((list) => [...list, { title: title.trim(), done: false }]);
    call.step();
    return { added: title.trim(), count: todos.length + 1 }; // todos of the latest render: useToolHandler keeps the newest handler
  });
  const add = (e: FormEvent) => {
    e.preventDefault();
    if (draft.trim() === "") return;
    setTodos((list) => [...list, { title: draft.trim(), done: false }]);
    setDraft("");
    client.step(); // the person's own change ends an agent's turn
  };
  return (
    <section aria-labelledby="todos-heading">
      <h2 id="todos-heading">Todos</h2>
      <ul id="todos">
        {todos.map((t, i) => (
          <li key={i}>
            <label>
              <input type="checkbox" checked={t.done}
                onChange={() => setTodos((list) => list.map((x, j) => (j === i ? { ...x, done: !x.done } : x)))} />
              {" " + t.title}
            </label>
          </li>
        ))}
      </ul>
      <form onSubmit={add}>
        <label>New todo <input value={draft} onChange={(e) => setDraft(e.target.value)} /></label>
        <button type="submit">Add</button>
      </form>
    </section>
  );
}

function App() {
  const { connect, disconnect } = useTabrelay();
  useEffect(() => {
    connect();
    return disconnect;
  }, [connect, disconnect]);
  return (
    <main>
      <h1>Todo</h1>
      <Status />
      <tabrelay-confirm permissions={permissions} />
      <tabrelay-activity turns={permissions.turns} />
      <Todos />
      <section aria-labelledby="agents-heading">
        <h2 id="agents-heading">Agents</h2>
        <tabrelay-connect client={client} app={app} />
        <tabrelay-connections client={client} app={app} />
        <tabrelay-data-switch permissions={permissions} />
        <tabrelay-permissions permissions={permissions} />
      </section>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<StrictMode><App /></StrictMode>);
