// @tabrelay/react: a React app's tabs reachable by agents through a
// tabrelay relay. createTabrelay(options) makes the page's one TabClient
// and returns the hooks bound to its declaration: useTabrelay() (the
// status, connect and disconnect, the client) and useToolHandler(tool,
// handler), which answers a tool's calls while the component that
// registered it is mounted. The JSX types of the seven elements are in
// ./elements.ts. web/sdk/README.md ("React") describes it.

import { useEffect, useLayoutEffect, useRef, useSyncExternalStore } from "react";
import {
  TabClient, ToolError,
  type AppDeclaration, type ClientOptions, type Handlers, type Status, type ToolCall, type ToolHandler, type ToolName,
} from "@tabrelay/tab";

export type { TabrelayElements } from "./elements.js";

/** What createTabrelay takes: the client's options without handlers (the components register them). */
export type TabrelayOptions<A extends AppDeclaration> = Omit<ClientOptions<A>, "handlers">;

/** What useTabrelay returns. */
export interface TabrelayState<A extends AppDeclaration> {
  /** The client's status; it re-renders the component at every change. */
  readonly status: Status;
  /** Starts the client (again, after a disconnect): client.start(). The same function at every render. */
  readonly connect: () => void;
  /** Closes the socket and stays disconnected: client.stop(). The same function at every render. */
  readonly disconnect: () => void;
  /** The page's client: for <tabrelay-connect client={…}>, connectInfo, approve, listConnections… */
  readonly client: TabClient<A>;
}

/** The hooks (and the client) of one app declaration. */
export interface Tabrelay<A extends AppDeclaration> {
  /** The page's client, made at the first use of a hook or of this property, not at createTabrelay. */
  readonly client: TabClient<A>;
  useTabrelay(): TabrelayState<A>;
  /**
   * useToolHandler answers tool's calls with handler while the calling
   * component is mounted (the newest registration of a tool answers). The
   * handler is typed as connect's handlers are: its call.arguments by the
   * tool's inputSchema, its result checked as JSON. It may change at every
   * render: a call runs the handler of the latest committed render.
   */
  useToolHandler<const N extends ToolName<A>, F>(tool: N, handler: F & Handlers<A, { readonly [K in N]: F }>[N]): void;
}

/** NO_HANDLER is the error a call gets while no mounted component answers its tool. */
export const NO_HANDLER = (tool: string): string =>
  `The tab cannot run ${tool} now: the part of the page that answers it is not open. Ask the person to open it, or try another tool.`;

const IDLE: Status = { state: "idle" };

/**
 * createTabrelay makes the hooks of one app. Call it once, at module level
 * (one client per page); connect with useTabrelay().connect, e.g. in the
 * root component's effect. Every declared tool gets a handler that calls
 * the one a mounted component registered, or answers NO_HANDLER.
 */
export function createTabrelay<const A extends AppDeclaration>(options: TabrelayOptions<A>): Tabrelay<A> {
  const registered = new Map<string, Array<{ current: unknown }>>();
  let made: TabClient<A> | undefined;
  const client = (): TabClient<A> => (made ??= makeClient(options, registered));
  const subscribe = (listener: () => void) => client().onStatus(listener);
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
      const ref = useRef<unknown>(handler);
      // The latest committed render's handler answers (not written during
      // render: a render React discards must not answer calls).
      useLayoutEffect(() => {
        ref.current = handler;
      });
      useEffect(() => {
        const stack = registered.get(tool) ?? [];
        registered.set(tool, stack);
        stack.push(ref);
        return () => {
          stack.splice(stack.indexOf(ref), 1);
        };
      }, [tool]);
    },
  };
}

function makeClient<A extends AppDeclaration>(options: TabrelayOptions<A>, registered: Map<string, Array<{ current: unknown }>>): TabClient<A> {
  const handlers: Record<string, ToolHandler> = {};
  for (const t of options.app.tools) {
    handlers[t.name] = (call: ToolCall) => {
      const stack = registered.get(t.name);
      const h = stack?.[stack.length - 1]?.current;
      if (h === undefined) throw new ToolError(NO_HANDLER(t.name));
      if (typeof h === "function") return (h as ToolHandler)(call);
      // One handler per action (the SDK checked the action is declared).
      const per = (h as Readonly<Record<string, ToolHandler>>)[call.action ?? ""];
      if (per === undefined) throw new ToolError(NO_HANDLER(`${t.name} (${call.action ?? "no action"})`));
      return per(call);
    };
  }
  // The delegates are typed loosely; the constructor checks at run time that every declared tool has one.
  type Options = ConstructorParameters<typeof TabClient<A>>[0];
  return new TabClient<A>({ ...options, handlers } as unknown as Options);
}
