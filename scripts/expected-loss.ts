// `npm run risk:expected-loss`: the expected-loss rates the loan book provisions new loans at
// (D-126), seeded from the platform's own history: the mirror's closed loans per class of borrower,
// weighted by their credibility against the rates in force (domain/loans/expected-loss.ts). Prints
// the figures and the timelock call that would set the proposal; it sends nothing (the admin key
// schedules it, D-100).
import { ZeroHash } from "ethers";
import { bootDatabase, isExpectedStartError } from "../core/boot.js";
import { connectRpc } from "../core/chain.js";
import { ConfigError, loadConfig } from "../core/config.js";
import { readDeployment } from "../core/deployments.js";
import { createLogger } from "../core/logger.js";
import { formatUsdc2 } from "../core/money.js";
import { platformContract } from "../core/platform-abi.js";
import { type ClassHistory, CREDIBILITY_LOANS, proposeExpectedLossRates } from "../domain/loans/expected-loss.js";
import { closedLoans } from "../domain/loans/repo.js";

const line = (name: string, history: ClassHistory, current: number) =>
  `expected-loss: ${name}: ${history.loans} closed loans, ${formatUsdc2(history.principal)} USDC lent, ` +
  `${formatUsdc2(history.uncovered)} lost by the depositors (observed ${history.observedBps ?? "-"} bps, ` +
  `credibility ${history.credibility.toFixed(2)}); in force ${current} bps, proposed ${history.proposedBps} bps`;

try {
  const config = loadConfig();
  const { provider, chainId } = await connectRpc(config.chain.rpcUrl);
  const deployment = readDeployment(chainId);
  if (!deployment) throw new ConfigError(`expected-loss: no recorded deployment for chain ${chainId} (npm run deploy)`);
  const loanBook = platformContract(deployment, "loanBook", provider);
  const [unprovenBps, provenBps] = (await loanBook.getFunction("expectedLossRates")()) as [bigint, bigint];
  const current = { unprovenBps: Number(unprovenBps), provenBps: Number(provenBps) };
  const db = await bootDatabase(config, createLogger(config.logLevel));
  const proposal = proposeExpectedLossRates(await closedLoans(db), current);
  await db.close();
  provider.destroy();

  console.log(line("unproven", proposal.unproven, current.unprovenBps));
  console.log(line("proven", proposal.proven, current.provenBps));
  console.log(
    `expected-loss: a class's history weighs n / (n + ${CREDIBILITY_LOANS}) against the rate in force; open loans are not counted`,
  );
  if (proposal.unproven.proposedBps === current.unprovenBps && proposal.proven.proposedBps === current.provenBps) {
    console.log("expected-loss: the rates in force stand");
  } else {
    const data = loanBook.interface.encodeFunctionData("setExpectedLossRates", [
      [proposal.unproven.proposedBps, proposal.proven.proposedBps],
    ]);
    const timelock = deployment.contracts.timelock?.address;
    console.log(`expected-loss: to set them, ADMIN_ADDRESS schedules on the timelock ${timelock ?? "(none recorded)"}:`);
    console.log(`  schedule(${await loanBook.getAddress()}, 0, ${data}, ${ZeroHash}, <salt>, <delay>), then execute after the delay`);
  }
} catch (error) {
  console.error(isExpectedStartError(error) ? (error as Error).message : error);
  process.exit(1);
}
