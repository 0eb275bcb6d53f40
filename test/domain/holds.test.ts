// Holds on one clock (domain/processes/presence.ts): a payment's attempt and a loan's funding
// claim belong to the process that took them, and are taken over once that process stops
// beating, never because the service clock moved; a killed process's row is pruned.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { createLoansRepo } from "../../domain/loans/repo.js";
import { createPaymentsRepo } from "../../domain/payments/repo.js";
import { createProcessPresence, DEAD_AFTER_S, PRUNE_DEAD_AFTER_S, type ProcessPresence } from "../../domain/processes/presence.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

const NOW = new Date("2026-03-01T00:00:00.000Z");
const DAY_MS = 86_400_000;

describe(`holds judged by their process, on the database's clock (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let presences: ProcessPresence[] = [];
  const process = () => {
    const presence = createProcessPresence({ db, kind: "test" });
    presences.push(presence);
    return presence;
  };
  /** The process's beat as a killed process leaves it: older than DEAD_AFTER_S. */
  const kill = async (presence: ProcessPresence, agoS = DEAD_AFTER_S + 1) => {
    const id = await presence.id();
    await presence.stop();
    await db.sql.query(
      `INSERT INTO "ServiceProcess" ("id", "kind", "pid", "host", "startedAt", "heartbeatAt")
       VALUES ($1, 'test', 1, 'gone', now(), now() - make_interval(secs => $2::int))
       ON CONFLICT ("id") DO UPDATE SET "heartbeatAt" = EXCLUDED."heartbeatAt"`,
      [id, agoS],
    );
  };

  before(async () => {
    db = await createTestDatabase();
    await db.prisma.user.create({
      data: {
        id: "holds-user",
        subject: "holds|user",
        displayName: "Holds",
        walletAddress: `0x${"2".repeat(40)}`,
        createdAt: NOW,
        updatedAt: NOW,
      },
    });
  });
  afterEach(async () => {
    for (const presence of presences) await presence.stop();
    presences = [];
  });
  after(async () => {
    await db?.destroy();
  });

  it("a payment's attempt holds it while its process beats, whatever the service clock says; then another takes it over", async () => {
    const id = randomUUID();
    await db.prisma.payment.create({
      data: {
        id,
        merchantId: "holds-user",
        amount: 1_000_000n,
        currency: "USDC",
        description: "",
        methods: ["direct"],
        metadata: {},
        status: "open",
        createdAt: NOW,
        expiresAt: new Date(NOW.getTime() + 30 * DAY_MS),
      },
    });
    const [first, second] = [process(), process()];
    const [a, b] = [createPaymentsRepo({ db, presence: first }), createPaymentsRepo({ db, presence: second })];
    const attempt = { method: "direct", payerId: "holds-user", payerAddress: `0x${"3".repeat(40)}` };
    expect(await a.claim(id, attempt, NOW)).to.equal(true);
    // A day later on the service clock (/dev/time/advance): the live holder keeps it.
    const later = new Date(NOW.getTime() + DAY_MS);
    expect(await b.claim(id, attempt, later)).to.equal(false);
    expect((await a.find(id, later))?.status).to.equal("processing");
    // Its process is killed: the payment is pending again and another attempt may take it, at once.
    await kill(first);
    expect((await a.find(id, NOW))?.status).to.equal("pending");
    expect(await b.claim(id, attempt, NOW)).to.equal(true);
    expect((await b.find(id, NOW))?.status).to.equal("processing");
  });

  it("a loan's funding claim stands while its funder's process beats; a dead funder's is claimed again, and listed for the job", async () => {
    const id = randomUUID();
    await db.prisma.loanRequest.create({
      data: {
        id,
        userId: "holds-user",
        borrower: `0x${"2".repeat(40)}`,
        chainId: 31337,
        amount: 100_000_000n,
        insuranceFee: 0n,
        interest: 0n,
        interestRateBps: 0,
        durationDays: 30,
        status: "pending",
        createdAt: NOW,
        expiresAt: new Date(NOW.getTime() + 30 * DAY_MS),
      },
    });
    const [first, second] = [process(), process()];
    const [a, b] = [createLoansRepo({ db, presence: first }), createLoansRepo({ db, presence: second })];
    expect((await a.claim(id, NOW))?.claimedBy).to.equal(await first.id());
    const later = new Date(NOW.getTime() + DAY_MS);
    expect(await b.claim(id, later)).to.equal(null);
    expect((await b.dueForFunding(later, later, 10)).map((row) => row.id)).to.not.include(id);
    await kill(first);
    expect((await b.dueForFunding(NOW, NOW, 10)).map((row) => row.id)).to.include(id);
    expect((await b.claim(id, NOW))?.claimedBy).to.equal(await second.id());
  });

  it("prunes the rows of processes dead an hour or more, and no other", async () => {
    const [recent, old, live] = [process(), process(), process()];
    await live.id();
    await kill(recent);
    await kill(old, PRUNE_DEAD_AFTER_S + 60);
    expect(await live.pruneDead()).to.equal(1);
    const left = (await db.prisma.serviceProcess.findMany({ select: { id: true } })).map((row) => row.id);
    expect(left).to.include.members([await recent.id(), await live.id()]);
    expect(left).to.not.include(await old.id());
  });
});
