import { expect } from "chai";
import { CORS_EXPOSED_HEADERS, CORS_REQUEST_HEADERS } from "../../api/http/cors.js";
import { startTestApi, type TestApi } from "../helpers/api.js";

// CORS on /v1 with CORS_ORIGINS naming the origins (D-108); the default, any origin, is tested in
// a real browser (test/browser/cors.test.ts). Only /v1: the checkout's pages and the sandbox stay
// same-origin.

describe("CORS with a configured list of origins", function () {
  this.timeout(60_000);
  let api: TestApi;
  const APP = "https://app.example.com";
  before(async () => {
    api = await startTestApi({ env: { CORS_ORIGINS: `${APP},http://localhost:5173` } });
  });
  after(async () => {
    await api?.close();
  });

  const preflight = (path: string, origin: string, headers = "authorization, content-type, idempotency-key") =>
    fetch(`${api.url}${path}`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": headers },
    });

  it("answers a listed origin's preflight with the methods and headers the API reads, cached 10 minutes", async () => {
    const answer = await preflight("/v1/vault/deposit", APP);
    expect(answer.status).to.equal(204);
    expect(answer.headers.get("access-control-allow-origin")).to.equal(APP);
    expect(answer.headers.get("vary")).to.match(/origin/i);
    expect(answer.headers.get("access-control-allow-headers")!.split(",")).to.deep.equal(CORS_REQUEST_HEADERS);
    expect(answer.headers.get("access-control-allow-methods")).to.equal("GET,POST,PUT,PATCH,DELETE");
    expect(answer.headers.get("access-control-max-age")).to.equal("600");
    expect(answer.headers.get("access-control-allow-credentials")).to.equal(null);
  });

  it("lets a listed origin read answers, refusals included, with the headers a client needs", async () => {
    const refused = await fetch(`${api.url}/v1/users/me`, { headers: { origin: APP } });
    expect(refused.status).to.equal(401);
    expect(refused.headers.get("access-control-allow-origin")).to.equal(APP);
    expect(refused.headers.get("access-control-expose-headers")!.split(",")).to.deep.equal(CORS_EXPOSED_HEADERS);
    const token = await api.token(`cors-${Date.now()}`);
    const me = await fetch(`${api.url}/v1/users/me`, { headers: { origin: "http://localhost:5173", authorization: `Bearer ${token}` } });
    expect(me.status).to.equal(200);
    expect(me.headers.get("access-control-allow-origin")).to.equal("http://localhost:5173");
  });

  it("gives another origin, the checkout and the sandbox nothing a browser would accept", async () => {
    const other = await preflight("/v1/vault/deposit", "https://evil.example");
    expect(other.headers.get("access-control-allow-origin")).to.equal(null);
    const read = await fetch(`${api.url}/v1/users/me`, { headers: { origin: "https://evil.example" } });
    expect(read.headers.get("access-control-allow-origin")).to.equal(null);
    for (const path of ["/checkout/00000000-0000-4000-8000-000000000000", "/dev/.well-known/jwks.json", "/health"]) {
      const answer = await fetch(`${api.url}${path}`, { headers: { origin: APP } });
      expect(answer.headers.get("access-control-allow-origin"), path).to.equal(null);
    }
  });
});
