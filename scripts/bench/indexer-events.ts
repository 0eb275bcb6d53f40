// The events of `npm run bench:indexer`: a realistic mix (loans, social vaults, yield,
// redemptions) first, then blocks of a few hundred transactions from 19 development accounts, sent
// without waiting for receipts; and the count of those the indexer keeps, to check the backfill
// stored every one.
import { type ContractCatalogue, platformAddresses } from "../../indexer/contracts.js";
import type { LogFilter, Rpc, RpcLog } from "../../indexer/rpc.js";
import { everyKindOfActivity } from "../../test/helpers/activity.js";
import { type TestChain, usdc } from "../../test/helpers/chain.js";

export interface Generated {
  expected: number;
  deposits: number;
  redeems: number;
  yields: number;
  ms: number;
}

/** The realistic mix, then bulk blocks of `txsPerBlock` transactions until the indexer's filters match at least `targetEvents` logs. */
export async function generate(
  chain: TestChain,
  rpc: Rpc,
  filters: LogFilter[],
  firstBlock: number,
  { targetEvents, txsPerBlock }: { targetEvents: number; txsPerBlock: number },
): Promise<Generated> {
  const started = performance.now();
  const request = (method: string, params: unknown[] = []) => chain.embedded.provider.request({ method, params });
  for (const first of [1, 5, 9]) {
    await everyKindOfActivity(chain, { depositor: first, borrower: first + 1, vaultOwner: first + 2, guardian: first + 3 });
  }

  const accounts = (await request("eth_accounts")) as string[];
  const deployer = accounts[0]!;
  const users = accounts.slice(1, 20);
  const vault = (await chain.contracts.vault.getAddress()).toLowerCase();
  const token = (await chain.contracts.usdc.getAddress()).toLowerCase();
  const usdcAbi = chain.contracts.usdc.interface;
  const vaultAbi = chain.contracts.vault.interface;
  const gas = "0x2bf20"; // 180,000: a deposit uses ~70,000-120,000; explicit, so nothing is estimated
  const send = (from: string, to: string, data: string) => request("eth_sendTransaction", [{ from, to, data, gas }]);

  await chain.setAutomine(false);
  for (const account of [deployer, ...users]) {
    await send(deployer, token, usdcAbi.encodeFunctionData("mint", [account, usdc(1_000_000_000)]));
    await send(account, token, usdcAbi.encodeFunctionData("approve", [vault, 2n ** 255n]));
  }
  await request("evm_mine");
  const head = Number.parseInt((await request("eth_blockNumber")) as string, 16);
  const before = (await Promise.all(filters.map((filter) => rpc.getLogs(filter, firstBlock, head)))).flat().length;

  // Per block: one yield distribution, a few redemptions of earlier deposits, deposits for the rest.
  let expected = before;
  let deposits = 0;
  let redeems = 0;
  let yields = 0;
  for (let block = 0; expected < targetEvents; block += 1) {
    const sends: Promise<unknown>[] = [send(deployer, vault, vaultAbi.encodeFunctionData("distributeYield", [usdc(5)]))];
    yields += 1;
    expected += 2; // YieldDistributed, USDC Transfer
    for (let i = 1; i < txsPerBlock; i += 1) {
      const user = users[(block * txsPerBlock + i) % users.length]!;
      if (block > 0 && i % 50 === 0) {
        sends.push(send(user, vault, vaultAbi.encodeFunctionData("redeem", [10n ** 18n, user, user])));
        redeems += 1;
      } else {
        sends.push(send(user, vault, vaultAbi.encodeFunctionData("deposit", [usdc(10 + (i % 90)), user])));
        deposits += 1;
      }
      expected += 3; // deposit: USDC Transfer, tmUSDC mint Transfer, Deposit; redeem: burn Transfer, USDC Transfer, Withdraw
    }
    await Promise.all(sends);
    await request("evm_mine");
    const mined = (await request("eth_getBlockByNumber", ["latest", false])) as { transactions: string[] };
    if (mined.transactions.length !== sends.length) {
      throw new Error(`block holds ${mined.transactions.length} of the ${sends.length} transactions sent: lower BENCH_TXS_PER_BLOCK`);
    }
  }
  await chain.setAutomine(true);
  return { expected, deposits, redeems, yields, ms: performance.now() - started };
}

/**
 * The logs the indexer keeps: the filters return every USDC Transfer (a filter cannot say "from
 * or to"), and the indexer drops those with neither end at the vault, the loan book or a social
 * vault (here: the mints to the development accounts).
 */
export function platformEvents(logs: RpcLog[], catalogue: ContractCatalogue, chain: TestChain): number {
  const addresses = platformAddresses(chain.deployment);
  const created = catalogue.topicOf("socialVaultFactory", "SocialVaultCreated");
  const watched = new Set([addresses.stakingVault, addresses.loanBook]);
  for (const log of logs) if (log.topics[0] === created && log.topics[2]) watched.add(`0x${log.topics[2].slice(26)}`.toLowerCase());
  const end = (topic: string | undefined) => `0x${(topic ?? "").slice(26)}`.toLowerCase();
  return logs.filter(
    (log) => log.address.toLowerCase() !== addresses.usdc || watched.has(end(log.topics[1])) || watched.has(end(log.topics[2])),
  ).length;
}
