import { expect } from "chai";
import { startTestApi, type TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";

describe(`XP, badges and Trust Score (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let api: TestApi;
  let alice: string;
  let bob: string;
  let aliceId: string;
  let bobId: string;

  before(async () => {
    api = await startTestApi();
    alice = await api.token("xp|alice", { name: "Alice", expiresIn: 86_400 });
    bob = await api.token("xp|bob", { name: "Bob", expiresIn: 86_400 });
    aliceId = (await api.request("GET", "/v1/users/me", { token: alice })).body.data.id;
    bobId = (await api.request("GET", "/v1/users/me", { token: bob })).body.data.id;
  });
  after(async () => {
    await api?.close();
  });

  describe("awardXp", () => {
    it("awards once per (user, type, sourceId), writes the activity, levels up and grants badges with outbox events", async () => {
      const { xp } = api.services;
      const first = await xp.award(aliceId, { type: "loan_created", description: "Loan requested", xp: 60, sourceId: "loan-1" });
      expect(first).to.deep.include({ awarded: true, xp: 60, level: "Newcomer", levelsReached: [], badgesEarned: ["first_loan"] });
      const replay = await xp.award(aliceId, { type: "loan_created", description: "Loan requested", xp: 60, sourceId: "loan-1" });
      expect(replay).to.deep.include({ awarded: false, xp: 60 });
      const second = await xp.award(aliceId, { type: "vault_deposit", description: "Deposit", xp: 300, sourceId: "0xabc" });
      expect(second).to.deep.include({ xp: 360, level: "Builder", levelsReached: ["Explorer", "Builder"] });
      expect(second.badgesEarned).to.deep.equal(["first_deposit"]);

      const response = await api.request("GET", `/v1/users/${aliceId}/xp`, { token: bob });
      expect(response.status, response.text).to.equal(200);
      const data = response.body.data;
      expect(data).to.deep.include({
        userId: aliceId,
        xp: 360,
        level: "Builder",
        nextLevel: "Achiever",
        xpToNextLevel: 390,
        progressPercent: 13,
      });
      expect(data.badges.map((b: { id: string }) => b.id)).to.deep.equal(["first_loan", "first_deposit"]);
      expect(data.badges[0]).to.have.keys(["id", "name", "earnedAt"]);
      expect(data.badges[0].name).to.equal("First Loan");

      const activity = (await api.request("GET", "/v1/users/me/activity?type=level_up", { token: alice })).body;
      expect(activity.data.map((a: { description: string }) => a.description).sort()).to.deep.equal([
        "Reached level Builder",
        "Reached level Explorer",
      ]);
      const pub = (await api.request("GET", `/v1/users/${aliceId}`)).body.data;
      expect(pub.badges).to.deep.equal(["first_loan", "first_deposit"]);

      const events = await api.db.prisma.domainEvent.findMany({ where: { userId: aliceId }, orderBy: { type: "asc" } });
      const types = events.map((e) => e.type);
      expect(types.filter((t) => t === "user.level_up")).to.have.length(2);
      expect(types.filter((t) => t === "user.badge_earned")).to.have.length(2);
      // The level bonus moved the Trust Score (Builder: 4 points), with its events.
      expect(types).to.include("trust_score.updated").and.include("user.trust_score_updated");
      const updated = events.find((e) => e.type === "trust_score.updated")!;
      expect(updated.id).to.match(/^[0-9a-f-]{36}$/);
      expect(updated.data).to.deep.include({ userId: aliceId, previousScore: 0, newScore: 4, change: 4 });
    });
  });

  describe("GET /v1/trust-score/{userId}", () => {
    it("answers the owner's score, tier, breakdown and borrowing power", async () => {
      const response = await api.request("GET", `/v1/trust-score/${aliceId}`, { token: alice });
      expect(response.status, response.text).to.equal(200);
      expect(response.body.data).to.deep.include({
        userId: aliceId,
        score: 4,
        tier: "New",
        breakdown: { seniority: 0, repaymentHistory: 0, transactionVolume: 0, socialNetwork: 0, levelBonus: 4 },
        borrowingPower: { maxAmount: 20, maxDuration: 7, interestRate: 0.05 },
      });
      expect(Date.parse(response.body.data.lastUpdated)).to.be.a("number");
    });

    it("follows the inputs other domains record, with history and modifiers", async () => {
      const { trust } = api.services;
      await api.db.prisma.$transaction((tx) =>
        trust.addInputs(tx, aliceId, { onTimeRepayments: 5, volumeMicro: 1_000n * 1_000_000n, activeGuardians: 4 }, "on-time repayment"),
      );
      api.services.invalidateUser(aliceId);
      // 0 + 10 + 12 + 15 + 4 = 41
      let score = (await api.request("GET", `/v1/trust-score/${aliceId}`, { token: alice })).body.data;
      expect(score).to.deep.include({ score: 41, tier: "Building" });
      expect(score.borrowingPower).to.deep.equal({ maxAmount: 50, maxDuration: 14, interestRate: 0.04 });

      await api.db.prisma.$transaction((tx) =>
        trust.addModifier(tx, aliceId, { type: "late_payment", reason: "loan-2 paid 3 days late", sourceId: "loan-2" }),
      );
      await api.db.prisma.$transaction((tx) =>
        trust.addModifier(tx, aliceId, { type: "late_payment", reason: "loan-2 paid 3 days late", sourceId: "loan-2" }),
      );
      api.services.invalidateUser(aliceId);
      score = (await api.request("GET", `/v1/trust-score/${aliceId}`, { token: alice })).body.data;
      expect(score.score).to.equal(39); // 41 - round(2.05) = 39

      const modifiers = (await api.request("GET", `/v1/trust-score/${aliceId}/modifiers`, { token: alice })).body.data;
      expect(modifiers).to.deep.include({ userId: aliceId, baseScore: 41, finalScore: 39 });
      expect(modifiers.modifiers).to.have.length(1);
      expect(modifiers.modifiers[0]).to.deep.include({
        type: "late_payment",
        impact: -2,
        reason: "loan-2 paid 3 days late",
        expiresAt: null,
      });

      const history = await api.request("GET", `/v1/trust-score/${aliceId}/history?period=7d`, { token: alice });
      expect(history.status, history.text).to.equal(200);
      expect(history.body.data.period).to.equal("7d");
      expect(history.body.data.history).to.have.length(1); // one row per day
      expect(history.body.data.history[0]).to.deep.include({ score: 39, change: 39, reason: "loan-2 paid 3 days late" });
      expect(history.body.data.history[0].date).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect((await api.request("GET", `/v1/trust-score/${aliceId}/history`, { token: alice })).body.data.period).to.equal("30d");
      expect((await api.request("GET", `/v1/trust-score/${aliceId}/history?period=2w`, { token: alice })).status).to.equal(400);
    });

    it("steps seniority monthly on the service clock", async () => {
      const before = (await api.request("GET", `/v1/trust-score/${bobId}`, { token: bob })).body.data;
      expect(before.breakdown.seniority).to.equal(0);
      api.clock.advance(62 * 86_400);
      // Two months on, the day-long tokens have expired: fresh ones.
      alice = await api.token("xp|alice", { expiresIn: 86_400 });
      bob = await api.token("xp|bob", { expiresIn: 86_400 });
      expect(await api.services.trust.runSeniorityStep(api.clock.now())).to.be.at.least(2);
      expect(await api.services.trust.runSeniorityStep(api.clock.now())).to.equal(0);
      const after = (await api.request("GET", `/v1/trust-score/${bobId}`, { token: bob })).body.data;
      expect(after.breakdown.seniority).to.equal(2);
      expect(after.score).to.equal(2);
      const history = (await api.request("GET", `/v1/trust-score/${bobId}/history?period=all`, { token: bob })).body.data.history;
      expect(history.at(-1)).to.deep.include({ score: 2, change: 2, reason: "seniority increase" });
    });

    it("keeps details private to the owner unless made public, and answers USER_NOT_FOUND", async () => {
      for (const path of ["", "/history", "/modifiers"]) {
        const refused = await api.request("GET", `/v1/trust-score/${aliceId}${path}`, { token: bob });
        expect(refused.status, refused.text).to.equal(403);
        expect(refused.body.error.code).to.equal("SCORE_PRIVATE");
        const missing = await api.request("GET", `/v1/trust-score/usr_nobody${path}`, { token: bob });
        expect(missing.status).to.equal(404);
        expect(missing.body.error.code).to.equal("USER_NOT_FOUND");
        expect((await api.request("GET", `/v1/trust-score/${aliceId}${path}`)).status).to.equal(401);
      }
      const patched = await api.request("PATCH", "/v1/users/me", { token: alice, body: { settings: { publicTrustScore: true } } });
      expect(patched.status, patched.text).to.equal(200);
      expect(patched.body.data.settings.publicTrustScore).to.equal(true);
      const allowed = await api.request("GET", `/v1/trust-score/${aliceId}`, { token: bob });
      expect(allowed.status, allowed.text).to.equal(200);
      expect(allowed.body.data.userId).to.equal(aliceId);
    });
  });

  describe("GET /v1/trust-score/tiers", () => {
    it("answers the spec's table without credentials", async () => {
      const response = await api.request("GET", "/v1/trust-score/tiers");
      expect(response.status).to.equal(200);
      expect(response.body.data).to.deep.equal([
        { tier: "New", minScore: 0, maxScore: 30, borrowingPower: { maxAmount: 20, maxDuration: 7 } },
        { tier: "Building", minScore: 31, maxScore: 50, borrowingPower: { maxAmount: 50, maxDuration: 14 } },
        { tier: "Established", minScore: 51, maxScore: 70, borrowingPower: { maxAmount: 100, maxDuration: 30 } },
        { tier: "Trusted", minScore: 71, maxScore: 85, borrowingPower: { maxAmount: 200, maxDuration: 60 } },
        { tier: "Elite", minScore: 86, maxScore: 100, borrowingPower: { maxAmount: 500, maxDuration: 90 } },
      ]);
    });
  });

  describe("POST /v1/trust-score/simulate", () => {
    it("projects the caller's score", async () => {
      const response = await api.request("POST", "/v1/trust-score/simulate", {
        token: bob,
        body: {
          actions: [
            { type: "repayment", count: 3 },
            { type: "add_guardian", count: 5 },
            { type: "level_up", count: 1 },
          ],
        },
      });
      expect(response.status, response.text).to.equal(200);
      const data = response.body.data;
      expect(data.currentScore).to.equal(2);
      expect(data.breakdown).to.deep.include({ repayments: "+6", guardian: "+15", levelUp: "+2" });
      // +2 per on-time repayment (part 4): 2 + 6 + 15 + 2 = 25, no bonus projected on top
      expect(data.projectedScore).to.equal(25);
      expect(data).to.deep.include({ newTier: "New", newBorrowingPower: { maxAmount: 20, maxDuration: 7 } });
      const deposit = await api.request("POST", "/v1/trust-score/simulate", {
        token: bob,
        body: { actions: [{ type: "deposit", count: 10_000 }] },
      });
      expect(deposit.body.data.breakdown).to.deep.equal({ deposit: "+16" });
    });

    it("validates the actions", async () => {
      for (const body of [
        {},
        { actions: [] },
        { actions: [{ type: "borrow", count: 1 }] },
        { actions: [{ type: "repayment", count: 0 }] },
      ]) {
        const response = await api.request("POST", "/v1/trust-score/simulate", { token: bob, body });
        expect(response.status, JSON.stringify(body)).to.equal(400);
        expect(response.body.error.code).to.equal("VALIDATION_ERROR");
      }
      expect(
        (await api.request("POST", "/v1/trust-score/simulate", { body: { actions: [{ type: "repayment", count: 1 }] } })).status,
      ).to.equal(401);
    });
  });
});
