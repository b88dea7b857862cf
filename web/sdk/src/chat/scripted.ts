// A scripted provider: the replies of a model written in advance, for
// tests and demos without a key. Each call takes the next step: a reply,
// a failure, or a function of the request; the requests are kept.

import { ProviderFailure, type ModelInfo, type ModelReply, type ModelRequest, type Provider } from "./contract.js";

/** One step of a script: what the next model call answers or throws. */
export type ScriptStep = ModelReply | ProviderFailure | ((request: ModelRequest) => ModelReply | Promise<ModelReply>);

export interface ScriptedProvider extends Provider {
  /** The requests the provider got, in order. */
  readonly requests: ModelRequest[];
  /** push adds steps at the end of the script. */
  push(...steps: ScriptStep[]): void;
}

/** scriptedProvider answers each model call with the script's next step; a call past its end is a request failure. */
export function scriptedProvider(steps: ScriptStep[] = [], o: { name?: string; models?: ModelInfo[] } = {}): ScriptedProvider {
  const script = [...steps];
  const requests: ModelRequest[] = [];
  return {
    id: "scripted", name: o.name ?? "Scripted model", origin: "null", requests,
    push: (...more) => void script.push(...more),
    listModels: async () => o.models ?? [{ id: "scripted", name: "Scripted model" }],
    async send(request) {
      requests.push(request);
      if (request.signal.aborted) throw request.signal.reason;
      const step = script.shift();
      if (!step) throw new ProviderFailure("request", "the script has no more replies");
      if (step instanceof ProviderFailure) throw step;
      const reply = typeof step === "function" ? await step(request) : step;
      if (request.signal.aborted) throw request.signal.reason;
      for (const p of reply.parts) if (p.type === "text") request.onText?.(p.text);
      // A step that counts no tokens costs its text's length: 4 characters a token.
      if (request.usage.input + request.usage.output === 0) {
        request.usage.input += JSON.stringify(request.messages).length >> 2;
        request.usage.output += JSON.stringify(reply.parts).length >> 2;
      }
      return reply;
    },
  };
}
