// A DOM for React Testing Library (happy-dom), registered before the tests load. The client's
// network stays Node's own: fetch, its Request/Response/Headers and the abort signals it takes
// are put back after the registration, so the hooks talk to the real service as an app would.
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
// (the README's too) must not hold the test process open that long after the run ends. Imported,
// not required: mocha requires this file as CommonJS, and the tests use the package's ESM build.
void import("@tanstack/react-query").then(({ timeoutManager }) =>
  timeoutManager.setTimeoutProvider({
    setTimeout: (callback, delay) => setTimeout(callback, delay).unref(),
    clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
    setInterval: (callback, delay) => setInterval(callback, delay).unref(),
    clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout),
  }),
);
