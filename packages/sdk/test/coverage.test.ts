import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// Every operation of the API's OpenAPI document has its method in the client (client.ts), but
// the few named here with the reason: a route added to the service without its SDK method fails.
const SDK = path.resolve(import.meta.dirname, "..");
const ELSEWHERE: Record<string, string> = {
  "GET /v1/notifications/stream": "notifications.stream() reads it as Server-Sent Events (stream.ts)",
  "GET /dev/.well-known/jwks.json": "the development provider's keys, read by the service itself",
  "GET /v1/openapi.json": "the document this client is generated from",
  "GET /v1/auth/jwks.json": "the keys of the service's own tokens, for a verifier of them (any JOSE library)",
};

/** "METHOD /path" of every operation the generated `paths` type has. */
function documented(): string[] {
  const generated = readFileSync(path.join(SDK, "src", "generated", "openapi.ts"), "utf8");
  const paths = generated.slice(generated.indexOf("export interface paths {"), generated.indexOf("export type webhooks"));
  return [...paths.matchAll(/^ {4}"(\/[^"]+)": \{([\s\S]*?)^ {4}\};/gm)].flatMap(([, route, body]) =>
    [...body!.matchAll(/^ {8}(get|put|post|delete|patch): operations/gm)].map(([, method]) => `${method!.toUpperCase()} ${route}`),
  );
}

describe("@trustmint/sdk covers the API", () => {
  it("has a method for every operation of the OpenAPI document, but those served otherwise", () => {
    const operations = documented();
    expect(operations.length).to.be.greaterThan(80);
    const client = readFileSync(path.join(SDK, "src", "client.ts"), "utf8");
    const called = new Set(
      [...client.matchAll(/api\.(GET|POST|PUT|PATCH|DELETE)\("([^"]+)"/g)].map(([, method, route]) => `${method} ${route}`),
    );
    // A signable write's prepare call is made by the client's `wallet` option for every such write (wallet.ts).
    const prepared = (operation: string) => operation.startsWith("POST ") && operation.endsWith("/prepare");
    expect(operations.filter(prepared).length).to.be.greaterThan(10);
    expect(operations.filter((operation) => !called.has(operation) && !(operation in ELSEWHERE) && !prepared(operation))).to.deep.equal([]);
    expect(Object.keys(ELSEWHERE).filter((operation) => !operations.includes(operation))).to.deep.equal([]);
  });
});
