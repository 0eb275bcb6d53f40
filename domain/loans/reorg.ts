// The loans' consumer of the outbox ("loans", D-94): a loan's state is the mirror's, so a funding
// needs nothing when it happens; but a funding a reorganisation removed leaves its request
// `funded` with no loan on chain. Taking each loan.funded is what brings its revert here: the
// request is pending again, for the funding job (or the sandbox) to fund anew, or for its
// borrower to cancel. If the funding comes back, the mirror shows the loan funded again.
import type { OutboxConsumer } from "../events/consumer.js";
import type { LoansRepo } from "./repo.js";

export function createLoansReorgConsumer(deps: {
  repo: Pick<LoansRepo, "unfund">;
  invalidateUser(userId: string): void;
}): OutboxConsumer<"loan.funded"> {
  return {
    name: "loans",
    types: ["loan.funded"],
    pageSize: 500,
    // Applying reads nothing of the event: only its revert does.
    dataFor: [],
    async apply() {},
    async revert(tx, facts) {
      await deps.repo.unfund(
        tx,
        facts.map((fact) => fact.data.loanId),
      );
    },
    afterCommit(events) {
      for (const event of events) if (event.userId) deps.invalidateUser(event.userId);
    },
  };
}
