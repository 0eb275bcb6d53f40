import { expect } from "chai";
import { createTtlCache } from "../../core/ttl-cache.js";

describe("ttl cache", () => {
  let now = 0;
  const cache = () => createTtlCache<string, number>({ max: 2, ttlMs: 1_000, nowMs: () => now });
  beforeEach(() => {
    now = 0;
  });

  it("expires entries at min(their own deadline, the TTL) on the given clock", () => {
    const c = cache();
    c.set("a", 1);
    c.set("b", 2, 500);
    now = 499;
    expect([c.get("a"), c.get("b")]).to.deep.equal([1, 2]);
    now = 500;
    expect([c.get("a"), c.get("b")]).to.deep.equal([1, undefined]);
    now = 1_000;
    expect(c.get("a")).to.equal(undefined);
    c.set("past", 3, 0);
    expect(c.get("past")).to.equal(undefined);
  });

  it("evicts the least recently used entry beyond max", () => {
    const c = cache();
    c.set("a", 1);
    c.set("b", 2);
    c.get("a");
    c.set("c", 3);
    expect([c.get("a"), c.get("b"), c.get("c")]).to.deep.equal([1, undefined, 3]);
    expect(c.size).to.equal(2);
  });

  it("loads once for concurrent misses and does not store a load overtaken by a delete", async () => {
    const c = cache();
    let calls = 0;
    const loader = async () => {
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 7;
    };
    expect(await Promise.all([c.load("k", loader), c.load("k", loader)])).to.deep.equal([7, 7]);
    expect(calls).to.equal(1);
    c.delete("k");
    const pending = c.load("k", loader);
    c.delete("k");
    expect(await pending).to.equal(7);
    expect(c.get("k")).to.equal(undefined);
    expect(await c.load("missing", async () => undefined)).to.equal(undefined);
  });
});
