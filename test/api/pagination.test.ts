// Cursor pages beside the spec's offset (D-113) on the lists read through SQL: notifications
// (Prisma), the activity feed (Prisma) and vault transactions (plain SQL), with rows that tie on
// their time, rows arriving mid-walk and a filter an item leaves mid-walk. Payments' pages are
// walked through the SDK (packages/sdk/test/resources.test.ts); the in-memory listing of loans
// against a reference in test/domain/pagination.test.ts.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { TYPE_RULES } from "../../domain/notifications/from-events.js";
import { type PageRequest, paginate } from "../../domain/pagination.js";
import { createVaultRepo } from "../../domain/vault/repo.js";
import { type Json, startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";

describe(`cursor pagination (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let alice: { token: string; id: string; wallet: string };
  let bob: { token: string; id: string; wallet: string };

  const signUp = async (sub: string) => {
    const token = await api.token(sub);
    const me = (await api.request("GET", "/v1/users/me", { token })).body.data;
    // The enterprise plan: no rate limit in the way of the walks.
    await api.request("PUT", `/dev/users/${me.id}/plan`, { body: { plan: "enterprise" } });
    return { token, id: me.id as string, wallet: me.walletAddress as string };
  };
  const notify = (userId: string) =>
    api.db.prisma.$transaction((tx) =>
      api.services.notifications.notify(tx, {
        userId,
        type: "level_up",
        data: { level: "Saver" },
        values: { level: "Saver" },
        ...TYPE_RULES.level_up,
        sourceId: randomUUID(),
      }),
    );
  const get = async (token: string, path: string) => {
    const response = await api.request("GET", path, { token });
    expect(response.status, response.text).to.equal(200);
    return response.body as { data: Json[]; pagination: { total: number; limit: number; offset: number; hasMore: boolean } };
  };
  const ids = (page: { data: Json[] }) => page.data.map((item) => item.id as string);
  /** Every item from the first page on, each next page read after the last item; `between` runs before each next page. */
  async function walk(token: string, path: string, between: (page: { data: Json[] }) => Promise<unknown> = async () => {}) {
    const join = path.includes("?") ? "&" : "?";
    const seen: string[] = [];
    let page = await get(token, path);
    for (;;) {
      seen.push(...ids(page));
      if (!page.pagination.hasMore) return seen;
      await between(page);
      page = await get(token, `${path}${join}starting_after=${ids(page).at(-1)}`);
    }
  }
  /** Every item from the last one back, each previous page read before the first item. */
  async function walkBack(token: string, path: string, from: string) {
    const join = path.includes("?") ? "&" : "?";
    const seen: string[] = [];
    let page = await get(token, `${path}${join}ending_before=${from}`);
    for (;;) {
      seen.unshift(...ids(page));
      if (!page.pagination.hasMore) {
        expect(page.pagination.offset).to.equal(0);
        return seen;
      }
      page = await get(token, `${path}${join}ending_before=${ids(page)[0]}`);
    }
  }

  before(async () => {
    api = await startTestApi();
    alice = await signUp("pages|alice");
    bob = await signUp("pages|bob");
  });
  after(async () => {
    await api?.close();
  });

  describe("notifications", () => {
    let all: string[];
    before(async () => {
      for (let i = 0; i < 13; i++) await notify(alice.id);
      // Five written in the same millisecond: the later write comes first.
      await api.db.sql.query(
        `UPDATE "Notification" SET "createdAt" = (SELECT min("createdAt") FROM "Notification" WHERE "userId" = $1)
          WHERE "id" IN (SELECT "id" FROM "Notification" WHERE "userId" = $1 ORDER BY "seq" LIMIT 5)`,
        [alice.id],
      );
      all = ids(await get(alice.token, "/v1/notifications?limit=100"));
      expect(all).to.have.length(13);
    });

    it("walks forward and back by cursor to the same list the offset reads at rest", async () => {
      expect(await walk(alice.token, "/v1/notifications?limit=4")).to.deep.equal(all);
      expect(await walkBack(alice.token, "/v1/notifications?limit=4", all.at(-1)!)).to.deep.equal(all.slice(0, -1));
      const middle = await get(alice.token, `/v1/notifications?limit=3&starting_after=${all[4]}`);
      expect(ids(middle)).to.deep.equal(all.slice(5, 8));
      expect(middle.pagination).to.deep.equal({ total: 13, limit: 3, offset: 5, hasMore: true });
      const newer = await get(alice.token, `/v1/notifications?limit=3&ending_before=${all[4]}`);
      expect(ids(newer)).to.deep.equal(all.slice(1, 4));
      expect(newer.pagination).to.deep.equal({ total: 13, limit: 3, offset: 1, hasMore: true });
    });

    it("sees each notification once while new ones arrive between pages (by offset, one repeats per arrival)", async () => {
      const byCursor = await walk(alice.token, "/v1/notifications?limit=4", () => notify(alice.id));
      expect(byCursor).to.deep.equal(all);

      const seen: string[] = [];
      for (let offset = 0; ; ) {
        const page = await get(alice.token, `/v1/notifications?limit=4&offset=${offset}`);
        seen.push(...ids(page));
        if (!page.pagination.hasMore) break;
        offset += page.data.length;
        await notify(alice.id);
      }
      expect(new Set(seen).size).to.be.lessThan(seen.length);
    });

    it("walks the unread ones while reading them: none skipped, though each page leaves the filter", async () => {
      const unread = ids(await get(alice.token, "/v1/notifications?limit=100&unread=true"));
      expect(unread.length).to.be.greaterThan(8);
      const seen = await walk(alice.token, "/v1/notifications?limit=4&unread=true", async (page) => {
        for (const id of ids(page)) await api.request("PATCH", `/v1/notifications/${id}/read`, { token: alice.token });
      });
      expect(seen).to.deep.equal(unread);
    });

    it("refuses both cursors, a cursor with an offset, and an id that is not one of the caller's items", async () => {
      const refused = async (query: string, field: string) => {
        const response = await api.request("GET", `/v1/notifications?${query}`, { token: alice.token });
        expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
        expect(response.body.error.details.field).to.equal(field);
      };
      await refused(`starting_after=${all[1]}&ending_before=${all[3]}`, "ending_before");
      await refused(`starting_after=${all[1]}&offset=2`, "offset");
      await refused(`starting_after=${randomUUID()}`, "starting_after");
      await refused("ending_before=not-an-id", "ending_before");
      await refused("starting_after=%E2%80%AE", "starting_after");
      await refused(`starting_after=${"a".repeat(201)}`, "starting_after");
      // Another user's notification is no item of Bob's list: the same answer as an unknown id.
      const response = await api.request("GET", `/v1/notifications?starting_after=${all[1]}`, { token: bob.token });
      expectErrorEnvelope(response, 400, "VALIDATION_ERROR");
      expect(response.body.error.details).to.deep.equal({ field: "starting_after", reason: "no item with this id" });
      // An explicit offset of 0 is no offset.
      expect((await api.request("GET", `/v1/notifications?starting_after=${all[1]}&offset=0`, { token: alice.token })).status).to.equal(
        200,
      );
    });
  });

  describe("activity feed", () => {
    it("breaks ties on the time by id, forward and back, with a type filter", async () => {
      const at = new Date("2026-06-01T00:00:00.000Z");
      const rows = Array.from({ length: 9 }, (_, i) => ({
        id: `act_page_${String(i).padStart(2, "0")}`,
        userId: alice.id,
        type: i % 2 === 0 ? "vault_deposit" : "loan_repaid",
        description: `entry ${i}`,
        // Three entries per instant.
        createdAt: new Date(at.getTime() + Math.floor(i / 3) * 1_000),
      }));
      await api.db.prisma.activity.createMany({ data: rows });
      const expected = [...rows]
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1))
        .map((row) => row.id);
      expect(ids(await get(alice.token, "/v1/users/me/activity?limit=100"))).to.deep.equal(expected);
      expect(await walk(alice.token, "/v1/users/me/activity?limit=2")).to.deep.equal(expected);
      expect(await walkBack(alice.token, "/v1/users/me/activity?limit=2", expected.at(-1)!)).to.deep.equal(expected.slice(0, -1));
      const deposits = expected.filter((id) => rows.find((row) => row.id === id)!.type === "vault_deposit");
      expect(await walk(alice.token, "/v1/users/me/activity?limit=2&type=vault_deposit")).to.deep.equal(deposits);
      // A cursor the filter leaves out still marks a place: the deposits after that loan repayment.
      const repayment = expected.find((id) => rows.find((row) => row.id === id)!.type === "loan_repaid")!;
      const afterIt = await get(alice.token, `/v1/users/me/activity?limit=100&type=vault_deposit&starting_after=${repayment}`);
      expect(ids(afterIt)).to.deep.equal(deposits.filter((id) => expected.indexOf(id) > expected.indexOf(repayment)));
      expectErrorEnvelope(
        await api.request("GET", `/v1/users/me/activity?starting_after=${expected[0]}`, { token: bob.token }),
        400,
        "VALIDATION_ERROR",
      );
    });
  });

  describe("vault transactions", () => {
    // The vault's routes need a deployed chain; its listing is read here as GET /v1/vault/transactions reads it.
    it("pages the mirror by its place on the chain; the id names the row", async () => {
      const { rows } = await api.db.sql.query<{ chainId: number }>(
        `INSERT INTO "ChainIdentity" ("id", "chainId", "genesisHash", "contracts", "updatedAt") VALUES (1, 31337, '0x00', '{}', now())
         ON CONFLICT ("id") DO UPDATE SET "id" = 1 RETURNING "chainId"`,
      );
      const chainId = rows[0]!.chainId;
      const owner = alice.wallet.toLowerCase();
      // Two withdrawals in one transaction (ordinals 0 and 1), the rest one per block.
      const entries = Array.from({ length: 7 }, (_, i) => ({
        blockNumber: 100 + Math.min(i, 5),
        logIndex: i === 6 ? 9 : 1,
        txHash: `0x${(i === 6 ? 5 : i).toString(16).padStart(64, "a")}`,
        ordinal: i === 6 ? 1 : 0,
        type: i >= 5 ? "withdraw" : "deposit",
      }));
      for (const entry of entries) {
        await api.db.sql.query(
          `INSERT INTO "VaultTransaction" ("chainId", "blockNumber", "logIndex", "txHash", "ordinal", "type", "owner", "sender", "receiver", "assets", "shares", "timestamp")
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $7, 1000000, 1000000000000000000, now())`,
          [chainId, entry.blockNumber, entry.logIndex, entry.txHash, entry.ordinal, entry.type, owner],
        );
      }
      const repo = createVaultRepo({ db: api.db });
      const read = (request: PageRequest, wallet = alice.wallet) => paginate(request, repo.listing(wallet));
      const cursor = (id: string, side: "after" | "before") => ({ id, side, field: side === "after" ? "starting_after" : "ending_before" });
      const all = (await read({ limit: 100, offset: 0 })).data.map((entry) => entry.id);
      expect(all).to.deep.equal([...entries].reverse().map((entry) => `${entry.txHash}-${entry.type}-${entry.ordinal}`));
      const seen: string[] = [];
      for (let page = await read({ limit: 3, offset: 0 }); ; ) {
        seen.push(...page.data.map((entry) => entry.id));
        if (!page.pagination.hasMore) break;
        page = await read({ limit: 3, cursor: cursor(page.data.at(-1)!.id, "after") });
      }
      expect(seen).to.deep.equal(all);
      const after = await read({ limit: 2, cursor: cursor(all[2]!, "after") });
      expect(after.data.map((entry) => entry.id)).to.deep.equal(all.slice(3, 5));
      expect(after.pagination).to.deep.equal({ total: 7, limit: 2, offset: 3, hasMore: true });
      const before = await read({ limit: 2, cursor: cursor(all[5]!, "before") });
      expect(before.data.map((entry) => entry.id)).to.deep.equal(all.slice(3, 5));
      expect(before.pagination).to.deep.equal({ total: 7, limit: 2, offset: 3, hasMore: true });
      const refusal = await read({ limit: 2, cursor: cursor(all[2]!, "after") }, bob.wallet).catch((error: unknown) => error);
      expect(refusal).to.include({ code: "VALIDATION_ERROR" });
    });
  });
});
