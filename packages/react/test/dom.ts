// A DOM for React Testing Library (happy-dom), registered before the tests load. The client's
// network stays Node's own: fetch, its Request/Response/Headers and the abort signals it takes
// are put back after the registration, so the hooks talk to the real service as an app would.
import { createRequire } from "node:module";
import path from "node:path";
import { setInterval, setTimeout } from "node:timers";
import { GlobalRegistrator } from "@happy-dom/global-registrator";

const NODE_NETWORK = [
  ...["fetch", "Request", "Response", "Headers", "FormData", "Blob", "File", "AbortController", "AbortSignal", "DOMException"],
  ...["ReadableStream", "WritableStream", "TransformStream", "TextDecoderStream", "TextEncoderStream"],
  ...["TextEncoder", "TextDecoder", "URL", "URLSearchParams", "crypto"],
];
const kept = Object.fromEntries(NODE_NETWORK.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]));
GlobalRegistrator.register({ url: "http://localhost:3000/" });
for (const [name, descriptor] of Object.entries(kept)) if (descriptor) Object.defineProperty(globalThis, name, descriptor);

// TanStack Query keeps an unused query for gcTime (5 minutes) on a timer; the apps' caches
// (the README's too) must not hold the test process open that long after the run ends. Both of the
// package's builds get unref'd timers: the tests load one, and a build left on its default took the
// DOM's timers and held the run open for five minutes after its last test.
const unrefTimers = {
  setTimeout: (callback: () => void, delay: number) => setTimeout(callback, delay).unref(),
  clearTimeout: (timer: unknown) => clearTimeout(timer as NodeJS.Timeout),
  setInterval: (callback: () => void, delay: number) => setInterval(callback, delay).unref(),
  clearInterval: (timer: unknown) => clearInterval(timer as NodeJS.Timeout),
};
const requireHere = createRequire(path.join(process.cwd(), "packages/react/test/dom.ts"));
for (const build of [requireHere("@tanstack/query-core"), await import("@tanstack/query-core")]) {
  build.timeoutManager.setTimeoutProvider(unrefTimers);
}
