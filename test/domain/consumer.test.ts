// The outbox consumers on the job queue (domain/events/consumer.ts): a producer turns the events
// above a consumer's cursor into page jobs, each page applied in one transaction and once; a bad
// event isolated from its page and dead in the queue after its attempts; the cursor exact beside
// transactions still running, reverts and facts back after a rollback.
import { expect } from "chai";
import { type Clock, createClock } from "../../core/clock.js";
import { openDatabase } from "../../core/db.js";
import type { Tx } from "../../domain/db.js";
import { type ConsumedEvent, createOutbox, type OutboxConsumer, type PagePayload, pageJobKind } from "../../domain/events/consumer.js";
import { domainEvent, recordEvents } from "../../domain/events/outbox.js";
import { createJobQueue, type JobQueue } from "../../domain/jobs/queue.js";
import { createProcessPresence, type ProcessPresence } from "../../domain/processes/presence.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { capturingLogger } from "../helpers/waiting.js";

const NOW = new Date("2026-03-01T00:00:00.000Z");
type LevelUp = ConsumedEvent<"user.level_up">;

describe(`outbox consumers on the job queue (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let clock: Clock;
  let presence: ProcessPresence;
  let queue: JobQueue;
  let written = 0;
  const { logger, lines } = capturingLogger();

  /** `count` level-up events of one user, in one outbox transaction, levels named `<prefix><i>`. */
  async function record(prefix: string, count: number): Promise<void> {
    const events = Array.from({ length: count }, (_, i) =>
      domainEvent({
        type: "user.level_up",
        userId: "consumer-user",
        data: { userId: "consumer-user", level: `${prefix}${i}`, previousLevel: "x", xp: i, timestamp: NOW.toISOString() },
        dedupeKey: `consumer-test:${prefix}:${i}`,
        now: new Date(NOW.getTime() + written++),
      }),
    );
    await db.prisma.$transaction((tx) => recordEvents(tx, events));
  }
  const idOf = async (prefix: string, i: number) =>
    (await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: `consumer-test:${prefix}:${i}` } })).id;
  /** The `notifications` consumer over level-up events, noting the levels it applies (and throwing for those in `failing`). */
  const levelsConsumer = (levels: string[], options: Partial<OutboxConsumer<"user.level_up">> & { failing?: Set<string> } = {}) =>
    ({
      name: "notifications",
      types: ["user.level_up"],
      pageSize: 2,
      ...options,
      apply: async (_tx: Tx, events: LevelUp[]) => {
        for (const event of events) if (options.failing?.has(event.data.level)) throw new Error(`bad level ${event.data.level}`);
        levels.push(...events.map((event) => event.data.level));
      },
    }) satisfies OutboxConsumer<"user.level_up">;
  const pageJobs = async () =>
    (await db.prisma.job.findMany({ where: { kind: pageJobKind("notifications") }, orderBy: { createdAt: "asc" } })).map(
      (job) => (job.payload as unknown as PagePayload).ids,
    );

  beforeEach(async () => {
    db = await createTestDatabase();
    written = 0;
    lines.length = 0;
    clock = createClock(() => NOW.getTime());
    presence = createProcessPresence({ db, kind: "test" });
    queue = createJobQueue({ db, clock, presence });
  });
  afterEach(async () => {
    await presence?.stop();
    await db?.destroy();
  });

  it("produces page jobs in the outbox's order, moves the cursor past them, and produces nothing twice", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    await record("a", 3);
    await record("b", 2);
    const consumer = levelsConsumer([]);
    const ids = [await idOf("a", 0), await idOf("a", 1), await idOf("a", 2), await idOf("b", 0), await idOf("b", 1)];
    expect(await outbox.produce(consumer, NOW)).to.deep.equal([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
    expect(await pageJobs()).to.deep.equal([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
    const last = await db.prisma.domainEvent.findUniqueOrThrow({ where: { id: ids[4]! } });
    expect(await db.prisma.consumerCursor.findUnique({ where: { consumer: "notifications" } })).to.include({
      xid: last.xid,
      seq: last.seq,
    });
    expect(await outbox.produce(consumer, NOW)).to.deep.equal([]);
    // Another consumer has a cursor of its own.
    expect((await outbox.produce({ ...consumer, name: "webhooks", pageSize: 10 }, NOW)).flat()).to.deep.equal(ids);
  });

  it("says which consumers have events to produce, in one statement", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    const notifications = levelsConsumer([]);
    const rewards = { ...levelsConsumer([]), name: "rewards" as const, types: ["vault.deposit"] as never };
    expect(await outbox.pending([notifications, rewards])).to.deep.equal([]);
    await record("p", 1);
    expect((await outbox.pending([notifications, rewards])).map((consumer) => consumer.name)).to.deep.equal(["notifications"]);
    await outbox.produce(notifications, NOW);
    expect(await outbox.pending([notifications, rewards])).to.deep.equal([]);
  });

  it("applies a page in one transaction, once, however often its job runs", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    await record("c", 2);
    const levels: string[] = [];
    const consumer = levelsConsumer(levels);
    const handle = outbox.handlers([consumer], clock)[pageJobKind("notifications")] as (payload: PagePayload) => Promise<void>;
    const [page] = await outbox.produce(consumer, NOW);
    await handle({ ids: page! });
    await handle({ ids: page! });
    expect(levels).to.deep.equal(["c0", "c1"]);
    expect(await db.prisma.consumedEvent.count({ where: { consumer: "notifications" } })).to.equal(2);
  });

  it("takes an API write's own events at once: its page job then skips them", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    await record("d", 2);
    const levels: string[] = [];
    const consumer = levelsConsumer(levels);
    expect(await outbox.take(consumer, [await idOf("d", 1)], NOW)).to.deep.equal({ applied: 1, failed: [] });
    const [page] = await outbox.produce(consumer, NOW);
    expect(await outbox.take(consumer, page!, NOW)).to.deep.equal({ applied: 1, failed: [] });
    expect(levels).to.deep.equal(["d1", "d0"]);
  });

  it("adopts a wallet's facts of no account once, and queues their page in the same transaction: a stop before the take leaves them to the queue (D-119)", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    const wallet = "0x00000000000000000000000000000000000Ab1e5";
    const deposit = (n: number, walletAddress: string) =>
      domainEvent({
        type: "vault.deposit",
        userId: "nobody",
        data: {
          userId: null,
          walletAddress,
          usdcAmount: `${n}.00`,
          tmUSDCReceived: `${n}.00`,
          txHash: `0x${String(n).padStart(64, "0")}`,
          raw: { assets: BigInt(n) * 1_000_000n, shares: BigInt(n) * 1_000_000n },
        },
        dedupeKey: `adopt-test:${n}`,
        now: new Date(NOW.getTime() + n),
      });
    await db.prisma.$transaction((tx) =>
      recordEvents(tx, [deposit(1, wallet), deposit(2, "0x00000000000000000000000000000000000000Aa"), deposit(3, wallet)]),
    );
    // Derived before any account had the wallet: no userId, and the consumer took them (it skipped them).
    await db.prisma.domainEvent.updateMany({ where: { dedupeKey: { startsWith: "adopt-test:" } }, data: { userId: null } });
    const applied: string[] = [];
    const consumer = {
      name: "rewards",
      types: ["vault.deposit"],
      apply: async (_tx: Tx, events: ConsumedEvent<"vault.deposit">[]) => {
        applied.push(...events.map((event) => `${event.userId}:${event.data.usdcAmount}`));
      },
    } satisfies OutboxConsumer<"vault.deposit">;
    const [skipped] = await outbox.produce(consumer, NOW);
    await outbox.take(consumer, skipped!, NOW);
    applied.length = 0;

    const adopted = await outbox.adopt({ userId: "u-adopter", wallet: wallet.toLowerCase(), consumers: [consumer] });
    expect(adopted).to.have.length(2);
    // The process stops here, before its own take: the queue holds the page, and its job applies it once.
    const jobs = await db.prisma.job.findMany({ where: { kind: pageJobKind("rewards") } });
    const pages = jobs
      .filter((job) => job.dedupeKey?.startsWith("outbox:rewards:adopted:"))
      .map((job) => (job.payload as unknown as PagePayload).ids);
    expect(pages).to.deep.equal([adopted]);
    const handle = outbox.handlers([consumer], clock)[pageJobKind("rewards")] as (payload: PagePayload) => Promise<void>;
    await handle({ ids: pages[0]! });
    await handle({ ids: pages[0]! });
    expect(applied).to.deep.equal(["u-adopter:1.00", "u-adopter:3.00"]);
    // Adopted once: a second adoption finds nothing and queues nothing.
    expect(await outbox.adopt({ userId: "u-adopter", wallet, consumers: [consumer] })).to.deep.equal([]);
    expect(await db.prisma.job.count({ where: { kind: pageJobKind("rewards") } })).to.equal(jobs.length);
  });

  it("applies a page whose apply throws event by event; its job fails until dead, listed, and a retry takes it", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    await record("e", 2);
    const levels: string[] = [];
    const failing = new Set(["e0"]);
    const consumer = levelsConsumer(levels, { failing });
    const handlers = outbox.handlers([consumer], clock);
    const handle = handlers[pageJobKind("notifications")] as (payload: PagePayload) => Promise<void>;
    await outbox.produce(consumer, NOW);
    const bad = await idOf("e", 0);
    // Every try: the good event was taken at the first, the bad one fails each time, until the job is dead.
    let now = NOW.getTime();
    clock = createClock(() => now);
    queue = createJobQueue({ db, clock, presence });
    for (let attempt = 1; ; attempt += 1) {
      const [job] = await queue.claim({ kinds: [pageJobKind("notifications")], limit: 1 });
      expect(job, `try ${attempt}`).to.not.equal(undefined);
      const error = await handle(job!.payload as PagePayload).then(
        () => undefined,
        (thrown: Error) => thrown,
      );
      expect(error?.message).to.equal(`events not applied: ${bad} (user.level_up): bad level e0`);
      if ((await queue.fail(job!, error, { durationMs: 1 })) === "dead") break;
      now += 2 * 3_600_000;
    }
    expect(levels).to.deep.equal(["e1"]);
    expect(lines.some((line) => line.msg === "events not applied; left untaken")).to.equal(true);
    const [dead] = await queue.listDead({ kind: pageJobKind("notifications") });
    expect(dead?.lastError).to.include(bad);
    // Fixed, and retried from the dead list: the bad event is taken, the good one not again.
    failing.clear();
    expect(await queue.retryDead(dead!.id)).to.equal(true);
    const [again] = await queue.claim({ kinds: [pageJobKind("notifications")], limit: 1 });
    await handle(again!.payload as PagePayload);
    expect(levels).to.deep.equal(["e1", "e0"]);
  });

  it("reads and decodes the data of the dataFor types only; takes an event the catalogue refuses without effect, and says it", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    await record("f", 2);
    await db.prisma.$executeRaw`UPDATE "DomainEvent" SET "data" = '{"level": 5}'::jsonb WHERE "dedupeKey" = 'consumer-test:f:1'`;
    const seen: unknown[] = [];
    const consumer: OutboxConsumer<"user.level_up"> = {
      name: "notifications",
      types: ["user.level_up"],
      apply: async (_tx, events) => {
        seen.push(...events.map((event) => event.data));
      },
    };
    const [page] = await outbox.produce(consumer, NOW);
    expect(await outbox.take(consumer, page!, NOW)).to.deep.equal({ applied: 1, failed: [] });
    expect(seen).to.deep.equal([{ userId: "consumer-user", level: "f0", previousLevel: "x", xp: 0, timestamp: NOW.toISOString() }]);
    expect(lines.map((line) => line.msg)).to.include("event data does not match the catalogue; skipped");
    expect(await db.prisma.consumedEvent.count({ where: { consumer: "notifications" } })).to.equal(2);

    await record("g", 1);
    const withoutData: unknown[] = [];
    const webhooks: OutboxConsumer<"user.level_up" | "vault.deposit"> = {
      name: "webhooks",
      types: ["user.level_up"],
      dataFor: ["vault.deposit"],
      apply: async (_tx, events) => {
        withoutData.push(...events.map((event) => [event.type, event.data]));
      },
    };
    await outbox.drain(webhooks, NOW);
    expect(withoutData).to.deep.equal([
      ["user.level_up", undefined],
      ["user.level_up", undefined],
      ["user.level_up", undefined],
    ]);
  });

  it("produces no reverted event, and produces a fact back after a rollback again (a new xid and seq)", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    await record("h", 2);
    const levels: string[] = [];
    const consumer = levelsConsumer(levels);
    await db.prisma.domainEvent.update({ where: { dedupeKey: "consumer-test:h:0" }, data: { revertedAt: NOW } });
    expect(await outbox.drain(consumer, NOW)).to.equal(1);
    // The log comes back: the indexer clears revertedAt and gives the event a new seq and its own transaction's id (indexer/store.ts).
    await db.prisma.$executeRaw`
      UPDATE "DomainEvent" SET "revertedAt" = NULL, "seq" = nextval(pg_get_serial_sequence('"DomainEvent"', 'seq')),
          "xid" = pg_current_xact_id()::text::bigint
        WHERE "dedupeKey" = 'consumer-test:h:0'`;
    expect(await outbox.drain(consumer, NOW)).to.equal(1);
    expect(levels).to.deep.equal(["h1", "h0"]);
  });

  it("takes back a fact a reorganisation removed, once, and applies it again if it comes back; not when it was back first (D-94)", async () => {
    const outbox = createOutbox({ db, jobs: queue, logger });
    const levels: string[] = [];
    const undone: string[] = [];
    const consumer = levelsConsumer(levels, {
      revert: async (_tx: Tx, facts: LevelUp[]) => {
        undone.push(...facts.map((fact) => fact.data.level));
      },
    });
    await record("r", 2);
    expect(await outbox.drain(consumer, NOW)).to.equal(2);
    const fact = await idOf("r", 0);
    // What the indexer's rollback writes: the fact marked reverted, and its chain.fact_reverted (indexer/store.ts).
    const revert = async (generation: number) => {
      await db.prisma.domainEvent.update({ where: { id: fact }, data: { revertedAt: NOW } });
      await db.prisma.$transaction((tx) =>
        recordEvents(tx, [
          domainEvent({
            type: "chain.fact_reverted",
            userId: "consumer-user",
            data: { eventId: fact, type: "user.level_up" },
            dedupeKey: `consumer-test:reverted:${generation}`,
            now: NOW,
          }),
        ]),
      );
    };
    const comeBack = () => db.prisma.$executeRaw`
      UPDATE "DomainEvent" SET "revertedAt" = NULL, "seq" = nextval(pg_get_serial_sequence('"DomainEvent"', 'seq')),
          "xid" = pg_current_xact_id()::text::bigint
        WHERE "id" = ${fact}::uuid`;
    await revert(1);
    await outbox.drain(consumer, NOW);
    expect(undone).to.deep.equal(["r0"]);
    expect(await db.prisma.consumedEvent.count({ where: { consumer: "notifications", eventId: fact } })).to.equal(0);
    // Back: applied again, once.
    await comeBack();
    await outbox.drain(consumer, NOW);
    await outbox.drain(consumer, NOW);
    expect(levels).to.deep.equal(["r0", "r1", "r0"]);
    // Reverted again, but back before the consumer reads the revert: nothing to take back, nothing to apply again.
    await revert(2);
    await comeBack();
    await outbox.drain(consumer, NOW);
    expect(undone).to.deep.equal(["r0"]);
    expect(levels).to.deep.equal(["r0", "r1", "r0"]);
  });

  // PGlite has one connection: no other session can hold a transaction open beside the producer's.
  if (usingPostgres) {
    it("never moves the cursor past a transaction still running: its event is produced once it commits", async () => {
      const other = await openDatabase({ databaseUrl: db.url! });
      const outbox = createOutbox({ db, jobs: queue, logger });
      const levels: string[] = [];
      const consumer = levelsConsumer(levels, { pageSize: 10 });
      try {
        let commit!: () => void;
        const committing = new Promise<void>((resolve) => {
          commit = resolve;
        });
        let wrote!: () => void;
        const written = new Promise<void>((resolve) => {
          wrote = resolve;
        });
        // Another process writes an event and keeps its transaction open...
        const writer = other.prisma.$transaction(
          async (tx) => {
            await recordEvents(tx, [
              domainEvent({
                type: "user.level_up",
                userId: "consumer-user",
                data: { userId: "consumer-user", level: "slow", previousLevel: "x", xp: 1, timestamp: NOW.toISOString() },
                dedupeKey: "consumer-test:slow:0",
                now: NOW,
              }),
            ]);
            wrote();
            await committing;
          },
          { timeout: 30_000 },
        );
        await written;
        // ...while later ones commit: they wait behind it (an xid above the oldest running transaction's).
        await record("i", 2);
        expect(await outbox.drain(consumer, NOW)).to.equal(0);
        commit();
        await writer;
        expect(await outbox.drain(consumer, NOW)).to.equal(3);
        expect(levels).to.deep.equal(["slow", "i0", "i1"]);
      } finally {
        await other.close();
      }
    });

    it("adopts a fact another process's page is taking at that moment: the adoption waits for the page, and the fact is the account's", async () => {
      const other = await openDatabase({ databaseUrl: db.url! });
      const wallet = "0x00000000000000000000000000000000000Ab1e6";
      await db.prisma.$transaction((tx) =>
        recordEvents(tx, [
          domainEvent({
            type: "vault.deposit",
            userId: "nobody",
            data: {
              userId: null,
              walletAddress: wallet,
              usdcAmount: "4.00",
              tmUSDCReceived: "4.00",
              txHash: `0x${"4".repeat(64)}`,
              raw: { assets: 4_000_000n, shares: 4_000_000n },
            },
            dedupeKey: "adopt-race:4",
            now: NOW,
          }),
        ]),
      );
      await db.prisma.domainEvent.updateMany({ where: { dedupeKey: "adopt-race:4" }, data: { userId: null } });
      const id = (await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: "adopt-race:4" } })).id;
      const applied: string[] = [];
      let inside!: () => void;
      const pageInside = new Promise<void>((resolve) => {
        inside = resolve;
      });
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const rewards = (hold: boolean) =>
        ({
          name: "rewards",
          types: ["vault.deposit"],
          apply: async (_tx: Tx, events: ConsumedEvent<"vault.deposit">[]) => {
            applied.push(...events.map((event) => `${event.userId}:${event.data.usdcAmount}`));
            if (hold) {
              inside();
              await released;
            }
          },
        }) satisfies OutboxConsumer<"vault.deposit">;
      try {
        // Another process's page marks the fact taken (no account yet) and is still applying it...
        const page = createOutbox({ db: other, jobs: createJobQueue({ db: other, clock, presence }), logger }).take(
          rewards(true),
          [id],
          NOW,
        );
        await pageInside;
        // ...when the wallet signs in: the adoption waits for it, then forgets its marker.
        let settled = false;
        const adoption = createOutbox({ db, jobs: queue, logger })
          .adopt({ userId: "u-racer", wallet, consumers: [rewards(false)] })
          .finally(() => {
            settled = true;
          });
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled, "the adoption waits for the page in flight").to.equal(false);
        release();
        await page;
        expect(await adoption).to.deep.equal([id]);
        await createOutbox({ db, jobs: queue, logger }).take(rewards(false), [id], NOW);
        expect(applied).to.deep.equal(["null:4.00", "u-racer:4.00"]);
      } finally {
        release();
        await other.close();
      }
    });

    it("produces each event once when two processes produce at once", async () => {
      const other = await openDatabase({ databaseUrl: db.url! });
      const otherPresence = createProcessPresence({ db: other, kind: "test" });
      try {
        await record("j", 9);
        const consumer = levelsConsumer([], { pageSize: 2 });
        const outboxes = [
          createOutbox({ db, jobs: queue, logger }),
          createOutbox({ db: other, jobs: createJobQueue({ db: other, clock, presence: otherPresence }), logger }),
        ];
        const pages = (await Promise.all([...outboxes, ...outboxes].map((outbox) => outbox.produce(consumer, NOW)))).flat();
        const ids = await Promise.all(Array.from({ length: 9 }, (_, i) => idOf("j", i)));
        expect(pages.flat().sort()).to.deep.equal([...ids].sort());
        expect((await pageJobs()).flat().sort()).to.deep.equal([...ids].sort());
      } finally {
        await otherPresence.stop();
        await other.close();
      }
    });
  }
});
