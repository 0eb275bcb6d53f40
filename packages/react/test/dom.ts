// A DOM for React Testing Library (happy-dom), registered before the tests load. The client's
// network stays Node's own: fetch, its Request/Response/Headers and the abort signals it takes
// are put back after the registration, so the hooks talk to the real service as an app would.
import { GlobalRegistrator } from "@happy-dom/global-registrator";

const NODE_NETWORK = [
  ...["fetch", "Request", "Response", "Headers", "FormData", "Blob", "File", "AbortController", "AbortSignal", "DOMException"],
  ...["ReadableStream", "WritableStream", "TransformStream", "TextDecoderStream", "TextEncoderStream"],
  ...["TextEncoder", "TextDecoder", "URL", "URLSearchParams", "crypto"],
];
const kept = Object.fromEntries(NODE_NETWORK.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]));
GlobalRegistrator.register({ url: "http://localhost:3000/" });
for (const [name, descriptor] of Object.entries(kept)) if (descriptor) Object.defineProperty(globalThis, name, descriptor);
