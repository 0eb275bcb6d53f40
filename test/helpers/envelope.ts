import { randomBytes } from "node:crypto";
import { expect } from "chai";
import type { ApiResponse } from "./api.js";

/** What a leaked stack trace or source path looks like in an answer. */
export const STACK = /\n\s+at |node_modules|\.[jt]s:\d+:\d+/;

/** A client address in 10.0.0.0/8 (sent as X-Forwarded-For from loopback, which the test API trusts). */
export const randomIp = () => `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

export function expectErrorEnvelope(response: ApiResponse, status: number, code: string) {
  expect(response.status, response.text).to.equal(status);
  expect(response.headers.get("content-type")).to.match(/^application\/json/);
  expect(response.body.success).to.equal(false);
  expect(response.body.error.code).to.equal(code);
  expect(response.body.error.message).to.be.a("string");
  expect(response.body.meta.requestId).to.equal(response.headers.get("x-request-id"));
  expect(response.text).to.not.match(STACK);
}
