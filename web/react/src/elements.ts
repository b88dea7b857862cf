// The JSX types of @tabrelay/tab/ui's seven elements. React 19 sets a
// custom element's properties (not attributes) when the element has
// them, so <tabrelay-connect client={client} app={app} /> hands the
// element its client, as page code's `panel.client = client` does. Import
// @tabrelay/tab/ui before the first render: it defines the elements, and
// React sets properties only on a defined element.

import type { DetailedHTMLProps, HTMLAttributes } from "react";
import type {
  TabrelayActivity, TabrelayConfirm, TabrelayConnect, TabrelayConnections, TabrelayDataSwitch, TabrelayNotice, TabrelayPermissions,
} from "@tabrelay/tab/ui";

/** An element's JSX props: the HTML ones, its ref, and the properties named (each optional). */
type Props<E extends HTMLElement, K extends keyof E> = DetailedHTMLProps<HTMLAttributes<E>, E> & { [P in K]?: E[P] };

/** The seven elements' props, by tag name. */
export interface TabrelayElements {
  "tabrelay-connect": Props<TabrelayConnect, "client" | "app">;
  "tabrelay-connections": Props<TabrelayConnections, "client" | "app">;
  "tabrelay-confirm": Props<TabrelayConfirm, "permissions">;
  "tabrelay-activity": Props<TabrelayActivity, "turns">;
  "tabrelay-data-switch": Props<TabrelayDataSwitch, "permissions">;
  "tabrelay-notice": Props<TabrelayNotice, "permissions">;
  "tabrelay-permissions": Props<TabrelayPermissions, "permissions">;
}

declare module "react" {
  namespace JSX {
    interface IntrinsicElements extends TabrelayElements {}
  }
}
