import net from "node:net";
import { expect } from "chai";
import { logThrottle } from "../../api/http/log-throttle.js";
import { clientErrorAnswer } from "../../api/server.js";
import { type Json, startTestApi, type TestApi } from "../helpers/api.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { freePort } from "../helpers/stack.js";
import { capturingLogger, until } from "../helpers/waiting.js";

type LogLine = { level: number; msg: string; req?: { id: string }; res?: { statusCode: number }; [field: string]: unknown };

const WARN = 40;
const ERROR = 50;

/** A pino logger at debug level whose lines are kept, parsed, in `lines`. */

/**
 * Writes the bytes as they are (fetch refuses to send a malformed request) and returns all the
 * server sent until it closed the connection. A reset after the answer (the server closing
 * with request bytes it never read) still counts as closed.
 */
function exchange(url: string, bytes: string): Promise<Buffer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.write(bytes, "latin1");
  });
}

interface RawResponse {
  status: number;
  statusLine: string;
  headers: Record<string, string>;
  body: Json;
}

/** One HTTP/1.1 response with a Content-Length body, and nothing after it. */
function parseOnlyResponse(raw: Buffer): RawResponse {
  const headEnd = raw.indexOf("\r\n\r\n");
  expect(headEnd, `no complete response head in ${JSON.stringify(raw.toString("latin1"))}`).to.be.above(0);
  const [statusLine = "", ...fields] = raw.subarray(0, headEnd).toString("latin1").split("\r\n");
  const match = /^HTTP\/1\.1 (\d{3}) [A-Za-z ]+$/.exec(statusLine);
  expect(match, statusLine).to.not.equal(null);
  const headers: Record<string, string> = {};
  for (const field of fields) {
    const colon = field.indexOf(":");
    headers[field.slice(0, colon).trim().toLowerCase()] = field.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"]);
  const rest = raw.subarray(headEnd + 4);
  // Exactly the announced body, then the end of the connection: no second answer behind it.
  expect(rest.length, "bytes after the head").to.equal(length);
  return { status: Number(match![1]), statusLine, headers, body: JSON.parse(rest.toString("utf8")) };
}

function expectEnvelopeAnswer(response: RawResponse, status: number, code: string) {
  expect(response.status, response.statusLine).to.equal(status);
  expect(response.headers["content-type"]).to.equal("application/json; charset=utf-8");
  expect(response.headers.connection).to.equal("close");
  expect(response.headers["x-content-type-options"]).to.equal("nosniff");
  expect(response.headers["cache-control"]).to.equal("no-store");
  expect(response.body.success).to.equal(false);
  expect(response.body.error.code).to.equal(code);
  expect(response.body.error.message).to.be.a("string");
  expect(response.body.meta.requestId).to.be.a("string").and.equal(response.headers["x-request-id"]);
  expect(Number.isNaN(Date.parse(response.body.meta.timestamp))).to.equal(false);
}

/** A plain request on a connection of its own: the server still serves after a refused one. */
async function expectStillServing(api: TestApi) {
  // Not /health: without an indexer beside this API it answers 503 (logged at warn).
  const response = parseOnlyResponse(
    await exchange(api.url, "GET /v1/trust-score/tiers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
  );
  expect(response.status).to.equal(200);
  expect(response.body.success).to.equal(true);
}

describe(`HTTP requests Node's parser refuses (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let token: string;
  let lines: LogLine[];

  before(async () => {
    const capture = capturingLogger<LogLine>();
    lines = capture.lines;
    api = await startTestApi({ logger: capture.logger });
    token = await api.token("client-errors");
  });
  after(async () => {
    await api?.close();
  });

  it("answers a header value with a control character with VALIDATION_ERROR (400) in the envelope", async () => {
    const raw = await exchange(api.url, "GET /v1/users/me HTTP/1.1\r\nHost: localhost\r\nX-Test: a\x01b\r\n\r\n");
    const response = parseOnlyResponse(raw);
    expectEnvelopeAnswer(response, 400, "VALIDATION_ERROR");
    expect(response.body.error.details).to.deep.equal({ field: "headers", reason: "Invalid header value char" });
    await expectStillServing(api);
  });

  it("answers a URL over the header limit with HEADERS_TOO_LARGE (431)", async () => {
    const raw = await exchange(api.url, `GET /v1/nothing?pad=${"a".repeat(17 * 1024)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expectEnvelopeAnswer(parseOnlyResponse(raw), 431, "HEADERS_TOO_LARGE");
    await expectStillServing(api);
  });

  it("answers 17 KB of headers with HEADERS_TOO_LARGE (431)", async () => {
    const padding = Array.from({ length: 17 }, (_, i) => `X-Pad-${i}: ${"a".repeat(1024)}\r\n`).join("");
    const raw = await exchange(api.url, `GET /v1/nothing HTTP/1.1\r\nHost: localhost\r\n${padding}\r\n`);
    expectEnvelopeAnswer(parseOnlyResponse(raw), 431, "HEADERS_TOO_LARGE");
    await expectStillServing(api);
  });

  // The chunk is refused after Express was handed the request: the answer comes from the
  // clientError listener, while the app's pipeline sees its request stream break.
  for (const { route, credentials } of [
    { route: "POST /dev/token", credentials: () => "" },
    { route: "PATCH /v1/users/me", credentials: () => `Authorization: Bearer ${token}\r\n` },
  ]) {
    it(`answers a malformed chunked body on ${route} with one VALIDATION_ERROR (400), logging no failure`, async () => {
      const raw = await exchange(
        api.url,
        `${route} HTTP/1.1\r\nHost: localhost\r\n${credentials()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      );
      const response = parseOnlyResponse(raw);
      expectEnvelopeAnswer(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details).to.deep.equal({ field: "body", reason: "Invalid character in chunk size" });
      // The answer carries the id of the request Express logs.
      const requestId = response.body.meta.requestId;
      await until(() => lines.some((line) => line.req?.id === requestId && line.msg === "request aborted"), "the request's log line");
      const logged = lines.filter((line) => line.req?.id === requestId);
      expect(
        logged.every((line) => line.level < WARN && line.res?.statusCode !== 500),
        JSON.stringify(logged),
      ).to.equal(true);
      await expectStillServing(api);
    });
  }

  it("answers oversized chunk extensions with PAYLOAD_TOO_LARGE (413)", async () => {
    const raw = await exchange(
      api.url,
      `POST /dev/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=${"a".repeat(17 * 1024)}\r\n`,
    );
    expectEnvelopeAnswer(parseOnlyResponse(raw), 413, "PAYLOAD_TOO_LARGE");
    await expectStillServing(api);
  });

  it("answers a request whose client stops sending mid-body with VALIDATION_ERROR (400)", async () => {
    const { hostname, port } = new URL(api.url);
    const raw = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      const socket = net.connect({ port: Number(port), host: hostname, allowHalfOpen: true });
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("error", () => {});
      socket.on("close", () => resolve(Buffer.concat(chunks)));
      // The end of the request side comes before the 100 announced bytes: the parser's EOF error.
      socket.end('POST /dev/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"sub":');
    });
    expectEnvelopeAnswer(parseOnlyResponse(raw), 400, "VALIDATION_ERROR");
    await expectStillServing(api);
  });

  it("logged nothing at warn or above for any of these", () => {
    expect(lines.filter((line) => line.level >= WARN)).to.deep.equal([]);
  });
});

describe("answers written outside Express", () => {
  it("map a request timeout to REQUEST_TIMEOUT (408), as Node's default does", () => {
    const timeout = Object.assign(new Error("Request timeout"), { code: "ERR_HTTP_REQUEST_TIMEOUT" });
    expect(clientErrorAnswer(timeout)).to.deep.include({ code: "REQUEST_TIMEOUT" });
  });
});

describe(`log levels: what a client can repeat stays below warn (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);

  it("logs 404, 401, 400 and 429 answers at debug, and a 500 at error", async () => {
    const { logger, lines } = capturingLogger<LogLine>();
    // The suite's own database, so it can be closed under the API to make it fail for real.
    const db: TestDatabase = await createTestDatabase();
    const api = await startTestApi({ logger, db });
    try {
      const token = await api.token("log-levels");
      const before = lines.length;
      const statuses = new Set<number>();
      // 404, 401 and 400 by turns, until the anonymous per-minute limit answers 429 to all of them.
      const refused = [
        () => api.request("GET", "/v1/nothing"),
        () => api.request("GET", "/v1/users/me", { headers: { authorization: "Bearer not-a-jwt" } }),
        () => api.request("PATCH", "/v1/users/me", { rawBody: '{"displayName": ', headers: { "content-type": "application/json" } }),
      ];
      for (let i = 0; i < 200; i++) statuses.add((await refused[i % refused.length]!()).status);
      expect([...statuses].sort()).to.deep.equal([400, 401, 404, 429]);
      const requestLines = () => lines.slice(before).filter((line) => line.msg === "request completed");
      await until(() => requestLines().length >= 200, "a log line for each request");
      expect(requestLines().every((line) => line.level === 20)).to.equal(true);
      expect(lines.filter((line) => line.level >= WARN)).to.deep.equal([]);

      await db.destroy();
      const failed = await api.request("PATCH", "/v1/users/me", { token, body: { displayName: "After the database went away" } });
      expect(failed.status, failed.text).to.equal(500);
      expect(failed.body.error.code).to.equal("INTERNAL_ERROR");
      const requestId = failed.body.meta.requestId;
      await until(() => lines.some((line) => line.req?.id === requestId), "the failed request's log line");
      expect(lines.find((line) => line.req?.id === requestId)).to.deep.include({ level: ERROR, msg: "request completed" });
      expect(lines.some((line) => line.level === ERROR && line.msg === "unhandled error" && line.requestId === requestId)).to.equal(true);
    } finally {
      await api.close();
    }
  });

  it("warns about an unreachable identity provider at most once a minute, however many tokens arrive", async () => {
    const { logger, lines } = capturingLogger<LogLine>();
    // Nothing listens there: every token's key lookup fails to connect.
    const jwksUrl = `http://127.0.0.1:${await freePort()}/jwks.json`;
    const api = await startTestApi({ logger, env: { AUTH_JWKS_URL: jwksUrl, AUTH_ISSUER: "https://idp.invalid/" } });
    try {
      const started = performance.now();
      const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
      for (let i = 0; i < 50; i++) {
        const forged = `${encode({ alg: "ES256", kid: `k${i}` })}.${encode({ sub: `s${i}`, exp: 4_000_000_000 })}.${encode({ sig: i })}`;
        const response = await api.request("GET", "/v1/users/me", { token: forged });
        expect(response.status, response.text).to.equal(401);
      }
      const minutes = Math.floor((performance.now() - started) / 60_000);
      const warnings = lines.filter((line) => line.level >= WARN);
      expect(warnings.map((line) => line.msg)).to.include("token verification failed (key set unavailable?)");
      expect(warnings.every((line) => line.msg === "token verification failed (key set unavailable?)")).to.equal(true);
      expect(warnings.length).to.be.within(1, 1 + minutes);
    } finally {
      await api.close();
    }
  });
});

describe("logThrottle", () => {
  it("lets one occurrence through per interval and counts the ones it held back", () => {
    let now = 0;
    const throttle = logThrottle(60_000, () => now);
    expect(throttle.due()).to.deep.equal({ log: true, suppressed: 0 });
    for (let i = 0; i < 99; i++) expect(throttle.due().log).to.equal(false);
    now = 59_999;
    expect(throttle.due().log).to.equal(false);
    now = 60_000;
    expect(throttle.due()).to.deep.equal({ log: true, suppressed: 100 });
    expect(throttle.due()).to.deep.equal({ log: false, suppressed: 1 });
  });
});
