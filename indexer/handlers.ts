import { ZeroAddress } from "ethers";
import { formatUsdc2, rateNumber, usdcNumber } from "../core/money.js";
import type { ContractCatalogue, Decoded, PlatformAddresses, Source } from "./contracts.js";
import { chainDedupeKey, loanIdFromRef, withdrawalIdOf } from "./ids.js";
import type { RpcLog } from "./rpc.js";
import { entity, type GuardianRow, type LoanState, type Position, type StateStore } from "./state.js";

/** A log on its way into the mirror: the raw fields, its source and what it decoded to. */
export interface IndexedLog {
  blockNumber: number;
  logIndex: number;
  blockHash: string;
  txHash: string;
  address: string;
  topics: string[];
  data: string;
  source: Source;
  status: "decoded" | "unknown" | "malformed";
  error: string | null;
  decoded: Decoded | null;
  entities: string[];
  /** Block time, seconds. */
  timestamp: number;
}

/** A domain event before the users it names are resolved from their wallets. */
export interface PendingEvent {
  type: string;
  /** The wallet whose user the event belongs to (null: no user, e.g. yield distributions). */
  wallet: string | null;
  /** Other wallets `data` refers to by user id. */
  wallets: string[];
  data: (userOf: (wallet: string) => string | null) => Record<string, unknown>;
  dedupeKey: string;
  blockNumber: number;
  timestamp: number;
}

export interface BatchOutput {
  vaultTransactions: unknown[][];
  yieldDistributions: unknown[][];
  usdcTransfers: unknown[][];
  events: PendingEvent[];
}

export const emptyOutput = (): BatchOutput => ({ vaultTransactions: [], yieldDistributions: [], usdcTransfers: [], events: [] });

const lower = (value: unknown) => String(value).toLowerCase();
const u = (value: unknown) => BigInt(value as bigint);
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

interface Context {
  chainId: number;
  state: StateStore;
  out: BatchOutput;
  /** False while a rollback rebuilds state: only the state is folded again, nothing appended or emitted. */
  emit: boolean;
}

interface Handler {
  /** The state rows this log changes. */
  entities(args: Decoded["args"], log: IndexedLog): string[];
  apply(ctx: Context, args: Decoded["args"], log: IndexedLog): void;
}

function event(ctx: Context, log: IndexedLog, type: string, wallet: string | null, data: PendingEvent["data"], wallets: string[] = []) {
  if (!ctx.emit) return;
  ctx.out.events.push({
    type,
    wallet,
    wallets,
    data,
    dedupeKey: chainDedupeKey(ctx.chainId, log.txHash, log.logIndex, type),
    blockNumber: log.blockNumber,
    timestamp: log.timestamp,
  });
}

function position(ctx: Context, owner: string, block: number): Position | undefined {
  const key = entity.position(owner);
  if (!ctx.state.inScope(key)) return undefined;
  let row = ctx.state.positions.get(key);
  if (!row) {
    row = {
      owner,
      shares: 0n,
      costBasis: 0n,
      realizedYield: 0n,
      deposited: 0n,
      withdrawn: 0n,
      firstDepositAt: null,
      lastDepositAt: null,
      lastWithdrawAt: null,
      updatedBlock: block,
    };
    ctx.state.positions.set(key, row);
  }
  ctx.state.touch(key);
  row.updatedBlock = block;
  return row;
}

function touched<T extends { updatedBlock: number }>(ctx: Context, map: Map<string, T>, key: string, block: number): T | undefined {
  const row = ctx.state.inScope(key) ? map.get(key) : undefined;
  if (row) {
    ctx.state.touch(key);
    row.updatedBlock = block;
  }
  return row;
}

const loanEventBase = (row: LoanState | undefined, loanId: bigint) => ({ loanId: row ? loanIdFromRef(row.ref) : loanId.toString() });

/** The derived rows and domain events of each platform event; events not listed are mirrored raw only. */
const HANDLERS: Partial<Record<Source, Record<string, Handler>>> = {
  usdc: {
    Transfer: {
      entities: ([from, to]) => [entity.socialVault(lower(from)), entity.socialVault(lower(to))],
      apply(ctx, [from, to, value], log) {
        const amount = u(value);
        if (ctx.emit) {
          ctx.out.usdcTransfers.push([
            log.blockNumber,
            log.logIndex,
            log.txHash,
            lower(from),
            lower(to),
            amount.toString(),
            iso(log.timestamp),
          ]);
        }
        const out = touched(ctx, ctx.state.vaults, entity.socialVault(lower(from)), log.blockNumber);
        if (out) out.balance -= amount;
        const into = touched(ctx, ctx.state.vaults, entity.socialVault(lower(to)), log.blockNumber);
        if (into) into.balance += amount;
      },
    },
  },
  stakingVault: {
    Transfer: {
      entities: ([from, to]) => [from, to].filter((a) => a !== ZeroAddress).map((a) => entity.position(lower(a))),
      apply(ctx, [fromRaw, toRaw, value], log) {
        const shares = u(value);
        const from = lower(fromRaw);
        const to = lower(toRaw);
        const mintOrBurn = fromRaw === ZeroAddress || toRaw === ZeroAddress;
        if (fromRaw !== ZeroAddress) {
          const sender = position(ctx, from, log.blockNumber);
          if (sender) {
            // A transfer to another holder takes its share of the cost basis with it (burns are
            // handled by the Withdraw event, which knows the assets paid out).
            if (!mintOrBurn && sender.shares > 0n) sender.costBasis -= (sender.costBasis * shares) / sender.shares;
            sender.shares -= shares;
          }
        }
        if (toRaw !== ZeroAddress) {
          const receiver = position(ctx, to, log.blockNumber);
          if (receiver) receiver.shares += shares;
        }
      },
    },
    Deposit: {
      entities: ([, owner]) => [entity.position(lower(owner))],
      apply(ctx, [sender, ownerRaw, assetsRaw, sharesRaw], log) {
        const owner = lower(ownerRaw);
        const assets = u(assetsRaw);
        const shares = u(sharesRaw);
        if (ctx.emit) {
          ctx.out.vaultTransactions.push([
            log.blockNumber,
            log.logIndex,
            log.txHash,
            "deposit",
            owner,
            lower(sender),
            owner,
            assets.toString(),
            shares.toString(),
            iso(log.timestamp),
          ]);
        }
        const row = position(ctx, owner, log.blockNumber);
        if (row) {
          row.costBasis += assets;
          row.deposited += assets;
          row.firstDepositAt ??= log.timestamp;
          row.lastDepositAt = log.timestamp;
        }
        event(ctx, log, "vault.deposit", owner, (userOf) => ({
          userId: userOf(owner),
          walletAddress: owner,
          usdcAmount: formatUsdc2(assets),
          tmUSDCReceived: formatUsdc2(shares / 1_000_000_000_000n),
          txHash: log.txHash,
        }));
      },
    },
    Withdraw: {
      entities: ([, , owner]) => [entity.position(lower(owner))],
      apply(ctx, [sender, receiver, ownerRaw, assetsRaw, sharesRaw], log) {
        const owner = lower(ownerRaw);
        const assets = u(assetsRaw);
        const shares = u(sharesRaw);
        if (ctx.emit) {
          ctx.out.vaultTransactions.push([
            log.blockNumber,
            log.logIndex,
            log.txHash,
            "withdraw",
            owner,
            lower(sender),
            lower(receiver),
            assets.toString(),
            shares.toString(),
            iso(log.timestamp),
          ]);
        }
        const row = position(ctx, owner, log.blockNumber);
        if (row) {
          // The burn (a Transfer to zero) came first: the shares before it are shares + burned.
          const before = row.shares + shares;
          const cost = before > 0n ? (row.costBasis * shares) / before : 0n;
          row.costBasis -= cost;
          row.realizedYield += assets - cost;
          row.withdrawn += assets;
          row.lastWithdrawAt = log.timestamp;
        }
        event(ctx, log, "vault.withdraw", owner, (userOf) => ({
          userId: userOf(owner),
          walletAddress: owner,
          tmUSDCRedeemed: formatUsdc2(shares / 1_000_000_000_000n),
          usdcReceived: formatUsdc2(assets),
          txHash: log.txHash,
        }));
      },
    },
    StakingVaultYieldDistributed: {
      entities: () => [],
      apply(ctx, [distributor, amount, totalYield, exchangeRate], log) {
        if (ctx.emit) {
          ctx.out.yieldDistributions.push([
            log.blockNumber,
            log.logIndex,
            log.txHash,
            lower(distributor),
            u(amount).toString(),
            u(totalYield).toString(),
            u(exchangeRate).toString(),
            iso(log.timestamp),
          ]);
        }
        event(ctx, log, "vault.yield_distributed", null, () => ({
          amount: formatUsdc2(u(amount)),
          totalYield: formatUsdc2(u(totalYield)),
          newExchangeRate: rateNumber(u(exchangeRate)),
          txHash: log.txHash,
        }));
      },
    },
  },
  loanBook: {
    LoanFunded: {
      entities: ([loanId]) => [entity.loan(u(loanId))],
      apply(ctx, [loanIdRaw, ref, borrowerRaw, principal, netAmount, interest, insuranceFee, durationDays, dueDate], log) {
        const loanId = u(loanIdRaw);
        const key = entity.loan(loanId);
        const borrower = lower(borrowerRaw);
        if (ctx.state.inScope(key)) {
          const row: LoanState = {
            loanId,
            ref: lower(ref),
            borrower,
            principal: u(principal),
            netAmount: u(netAmount),
            interest: u(interest),
            insuranceFee: u(insuranceFee),
            durationDays: Number(durationDays),
            dueDate: Number(dueDate),
            fundedAt: log.timestamp,
            fundTxHash: log.txHash,
            status: "active",
            totalPaid: 0n,
            remainingBalance: u(principal) + u(interest),
            extensions: 0,
            lastPaymentAt: null,
            closedAt: null,
            updatedBlock: log.blockNumber,
          };
          ctx.state.loans.set(key, row);
          ctx.state.touch(key);
        }
        event(ctx, log, "loan.funded", borrower, () => ({
          loanId: loanIdFromRef(String(ref)),
          amount: usdcNumber(u(principal)),
          netAmount: usdcNumber(u(netAmount)),
          dueDate: iso(Number(dueDate)),
          txHash: log.txHash,
        }));
      },
    },
    LoanRepaymentMade: {
      entities: ([loanId]) => [entity.loan(u(loanId))],
      apply(ctx, [loanIdRaw, borrower, , amount, , , remainingBalance, totalPaid, closed], log) {
        const loanId = u(loanIdRaw);
        const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
        if (row) {
          row.totalPaid = u(totalPaid);
          row.remainingBalance = u(remainingBalance);
          row.lastPaymentAt = log.timestamp;
          if (closed) {
            row.status = "repaid";
            row.closedAt = log.timestamp;
          }
        }
        const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
        if (closed) {
          event(ctx, log, "loan.repaid", lower(borrower), () => ({ ...base, totalPaid: usdcNumber(u(totalPaid)), txHash: log.txHash }));
        } else {
          event(ctx, log, "loan.partial_payment", lower(borrower), () => ({
            ...base,
            amount: usdcNumber(u(amount)),
            remainingBalance: usdcNumber(u(remainingBalance)),
            txHash: log.txHash,
          }));
        }
      },
    },
    LoanExtended: {
      entities: ([loanId]) => [entity.loan(u(loanId))],
      apply(ctx, [loanId, , , additionalInterest, newDueDate], log) {
        const row = touched(ctx, ctx.state.loans, entity.loan(u(loanId)), log.blockNumber);
        if (row) {
          row.interest += u(additionalInterest);
          row.remainingBalance += u(additionalInterest);
          row.dueDate = Number(newDueDate);
          row.extensions += 1;
          if (row.status === "overdue") row.status = "active";
        }
      },
    },
    LoanMarkedOverdue: {
      entities: ([loanId]) => [entity.loan(u(loanId))],
      apply(ctx, [loanIdRaw, borrower, dueDate], log) {
        const loanId = u(loanIdRaw);
        const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
        if (row) row.status = "overdue";
        const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
        event(ctx, log, "loan.overdue", lower(borrower), () => ({
          ...base,
          daysOverdue: Math.max(0, Math.floor((log.timestamp - Number(dueDate)) / 86_400)),
        }));
      },
    },
    LoanDefaulted: {
      entities: ([loanId]) => [entity.loan(u(loanId))],
      apply(ctx, [loanIdRaw, borrower, loss, covered, uncovered], log) {
        const loanId = u(loanIdRaw);
        const row = touched(ctx, ctx.state.loans, entity.loan(loanId), log.blockNumber);
        if (row) {
          row.status = "defaulted";
          row.closedAt = log.timestamp;
        }
        const base = loanEventBase(row ?? ctx.state.loans.get(entity.loan(loanId)), loanId);
        event(ctx, log, "loan.defaulted", lower(borrower), () => ({
          ...base,
          loss: usdcNumber(u(loss)),
          coveredByInsurance: usdcNumber(u(covered)),
          uncovered: usdcNumber(u(uncovered)),
          txHash: log.txHash,
        }));
      },
    },
  },
  socialVaultFactory: {
    SocialVaultCreated: {
      entities: ([, vault]) => [entity.socialVault(lower(vault))],
      apply(ctx, [owner, vaultRaw, dailyLimit, timelockDuration, requiredSignatures], log) {
        const address = lower(vaultRaw);
        const key = entity.socialVault(address);
        if (!ctx.state.inScope(key)) return;
        const existing = ctx.state.vaults.get(key);
        ctx.state.vaults.set(key, {
          address,
          owner: lower(owner),
          dailyLimit: u(dailyLimit),
          timelockDuration: Number(timelockDuration),
          requiredSignatures: Number(requiredSignatures),
          hasDuressPin: existing?.hasDuressPin ?? false,
          locked: false,
          lockedAt: null,
          // USDC sent to the address before its creation is still its balance.
          balance: existing?.balance ?? 0n,
          createdAt: log.timestamp,
          createdTxHash: log.txHash,
          updatedBlock: log.blockNumber,
        });
        ctx.state.touch(key);
      },
    },
  },
  socialVault: socialVaultHandlers(),
};

function socialVaultHandlers(): Record<string, Handler> {
  const vaultKey = (log: IndexedLog) => entity.socialVault(log.address);
  const withdrawalKey = (log: IndexedLog, id: unknown) => entity.withdrawal(log.address, u(id));
  const ownerOf = (ctx: Context, log: IndexedLog) => ctx.state.vaults.get(vaultKey(log))?.owner ?? null;
  const close = (status: "executed" | "cancelled" | "expired"): Handler => ({
    entities: ([id], log) => [withdrawalKey(log, id)],
    apply(ctx, args, log) {
      const row = touched(ctx, ctx.state.withdrawals, withdrawalKey(log, args[0]), log.blockNumber);
      if (row) {
        row.status = status;
        row.closedAt = log.timestamp;
        row.closedTxHash = log.txHash;
      }
      if (status === "executed") {
        const [id, amount, recipient] = args;
        const owner = ownerOf(ctx, log);
        event(ctx, log, "social_vault.withdrawal_executed", owner, () => ({
          withdrawalId: withdrawalIdOf(log.address, u(id)),
          amount: formatUsdc2(u(amount)),
          recipient: lower(recipient),
          txHash: log.txHash,
        }));
      }
    },
  });
  /** An event whose first argument is a guardian and which changes only that guardian's row. */
  const guardianChange = (change: (row: GuardianRow, args: Decoded["args"]) => void): Handler => ({
    entities: ([guardian], log) => [entity.guardian(log.address, lower(guardian))],
    apply(ctx, args, log) {
      const row = touched(ctx, ctx.state.guardians, entity.guardian(log.address, lower(args[0])), log.blockNumber);
      if (row) change(row, args);
    },
  });
  const config = (apply: (ctx: Context, args: Decoded["args"], log: IndexedLog) => void): Handler => ({
    entities: (_args, log) => [vaultKey(log)],
    apply,
  });

  return {
    SocialVaultWithdrawalRequested: {
      entities: ([id], log) => [withdrawalKey(log, id)],
      apply(ctx, [id, amount, recipient, executeAfter, expiresAt, requiredApprovals], log) {
        const key = withdrawalKey(log, id);
        if (ctx.state.inScope(key)) {
          ctx.state.withdrawals.set(key, {
            vault: log.address,
            requestId: u(id),
            amount: u(amount),
            recipient: lower(recipient),
            executeAfter: Number(executeAfter),
            expiresAt: Number(expiresAt),
            requiredApprovals: Number(requiredApprovals),
            approvals: 0,
            approvers: [],
            status: "pending",
            requestedAt: log.timestamp,
            requestTxHash: log.txHash,
            closedTxHash: null,
            closedAt: null,
            updatedBlock: log.blockNumber,
          });
          ctx.state.touch(key);
        }
        event(ctx, log, "social_vault.withdrawal_requested", ownerOf(ctx, log), () => ({
          withdrawalId: withdrawalIdOf(log.address, u(id)),
          amount: formatUsdc2(u(amount)),
          recipient: lower(recipient),
          requiredApprovals: Number(requiredApprovals),
          executeAfter: iso(Number(executeAfter)),
          expiresAt: iso(Number(expiresAt)),
        }));
      },
    },
    SocialVaultWithdrawalApproved: {
      entities: ([id], log) => [withdrawalKey(log, id)],
      apply(ctx, [id, guardianRaw, totalApprovals], log) {
        const guardian = lower(guardianRaw);
        const row = touched(ctx, ctx.state.withdrawals, withdrawalKey(log, id), log.blockNumber);
        if (row) {
          row.approvals = Number(totalApprovals);
          if (!row.approvers.includes(guardian)) row.approvers.push(guardian);
        }
        event(
          ctx,
          log,
          "social_vault.withdrawal_approved",
          ownerOf(ctx, log),
          (userOf) => ({
            withdrawalId: withdrawalIdOf(log.address, u(id)),
            approver: userOf(guardian) ?? guardian,
            approverAddress: guardian,
            totalApprovals: Number(totalApprovals),
          }),
          [guardian],
        );
      },
    },
    SocialVaultWithdrawalApprovalRevoked: {
      entities: ([id], log) => [withdrawalKey(log, id)],
      apply(ctx, [id, guardianRaw, totalApprovals], log) {
        const row = touched(ctx, ctx.state.withdrawals, withdrawalKey(log, id), log.blockNumber);
        if (row) {
          row.approvals = Number(totalApprovals);
          row.approvers = row.approvers.filter((g) => g !== lower(guardianRaw));
        }
      },
    },
    SocialVaultWithdrawalExecuted: close("executed"),
    SocialVaultWithdrawalCancelled: close("cancelled"),
    SocialVaultWithdrawalExpired: close("expired"),
    SocialVaultLocked: config((ctx, [lockedAt], log) => {
      const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
      if (row) {
        row.locked = true;
        row.lockedAt = Number(lockedAt);
      }
      const owner = ownerOf(ctx, log);
      event(ctx, log, "social_vault.locked", owner, (userOf) => ({
        vaultOwner: owner ? (userOf(owner) ?? owner) : null,
        vaultAddress: log.address,
        lockedAt: iso(Number(lockedAt)),
      }));
    }),
    SocialVaultUnlocked: config((ctx, _args, log) => {
      const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
      if (row) {
        row.locked = false;
        row.lockedAt = null;
      }
    }),
    SocialVaultDuressCommitmentSet: config((ctx, [commitment], log) => {
      const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
      if (row) row.hasDuressPin = BigInt(commitment) !== 0n;
    }),
    SocialVaultConfigUpdated: config((ctx, [parameter, value], log) => {
      const row = touched(ctx, ctx.state.vaults, vaultKey(log), log.blockNumber);
      if (!row) return;
      // ISocialVault.ConfigParameter: DailyLimit, TimelockDuration, RequiredSignatures.
      if (Number(parameter) === 0) row.dailyLimit = u(value);
      else if (Number(parameter) === 1) row.timelockDuration = Number(value);
      else if (Number(parameter) === 2) row.requiredSignatures = Number(value);
    }),
    SocialVaultGuardianAdded: {
      entities: ([guardian], log) => [entity.guardian(log.address, lower(guardian))],
      apply(ctx, [guardianRaw, activeAt], log) {
        const guardian = lower(guardianRaw);
        const key = entity.guardian(log.address, guardian);
        if (ctx.state.inScope(key)) {
          ctx.state.guardians.set(key, {
            vault: log.address,
            guardian,
            activeAt: Number(activeAt),
            removalValidAt: null,
            removed: false,
            addedTxHash: log.txHash,
            updatedBlock: log.blockNumber,
          });
          ctx.state.touch(key);
        }
        event(
          ctx,
          log,
          "user.guardian_added",
          ownerOf(ctx, log),
          (userOf) => ({
            vaultAddress: log.address,
            guardianAddress: guardian,
            guardianUserId: userOf(guardian),
            activeAt: iso(Number(activeAt)),
          }),
          [guardian],
        );
      },
    },
    SocialVaultGuardianRemovalSubmitted: guardianChange((row, [, validAt]) => {
      row.removalValidAt = Number(validAt);
    }),
    SocialVaultGuardianRemovalRevoked: guardianChange((row) => {
      row.removalValidAt = null;
    }),
    SocialVaultGuardianRemoved: guardianChange((row) => {
      row.removed = true;
      row.removalValidAt = null;
    }),
  };
}

/** Which source a raw log belongs to, or null when it is not the platform's. */
export interface Classifier {
  addresses: PlatformAddresses;
  socialVaults: Set<string>;
  /** Managed wallets and other addresses whose USDC transfers are mirrored. */
  wallets: Set<string>;
}

function classify(log: RpcLog, classifier: Classifier): Source | null {
  const address = log.address.toLowerCase();
  const { addresses } = classifier;
  if (address === addresses.stakingVault) return "stakingVault";
  if (address === addresses.loanBook) return "loanBook";
  if (address === addresses.socialVaultFactory) return "socialVaultFactory";
  if (address === addresses.usdc) return "usdc";
  if (classifier.socialVaults.has(address)) return "socialVault";
  return null;
}

/** Is this USDC transfer one the platform cares about (touching its contracts, vaults or wallets)? */
function watchedTransfer(decoded: Decoded, classifier: Classifier): boolean {
  const from = lower(decoded.args[0]);
  const to = lower(decoded.args[1]);
  const { addresses, socialVaults, wallets } = classifier;
  const watched = (a: string) => a === addresses.stakingVault || a === addresses.loanBook || socialVaults.has(a) || wallets.has(a);
  return watched(from) || watched(to);
}

/**
 * Turns raw logs (sorted by block and index) into indexed logs: source, decoded event, the
 * entities it changes. Social vault clones created inside the batch are recognised for the
 * logs that follow their creation. Logs that are not the platform's are dropped here.
 */
export function decodeLogs(
  raw: RpcLog[],
  catalogue: ContractCatalogue,
  classifier: Classifier,
  timestampOf: (blockNumber: number) => number,
): IndexedLog[] {
  // A clone's initializer logs come before the factory's SocialVaultCreated of the same
  // transaction: know every vault created in this range before classifying.
  const created = catalogue.topicOf("socialVaultFactory", "SocialVaultCreated");
  for (const log of raw) {
    if (log.topics[0] === created && log.address.toLowerCase() === classifier.addresses.socialVaultFactory && log.topics[2]) {
      classifier.socialVaults.add(`0x${log.topics[2].slice(26)}`.toLowerCase());
    }
  }
  const logs: IndexedLog[] = [];
  for (const log of raw) {
    const source = classify(log, classifier);
    if (source === null) continue;
    const blockNumber = Number.parseInt(log.blockNumber, 16);
    let decoded: Decoded | null = null;
    let status: IndexedLog["status"] = "decoded";
    let error: string | null = null;
    try {
      decoded = catalogue.decode(source, log);
      if (decoded === null) status = "unknown";
    } catch (caught) {
      status = "malformed";
      error = String((caught as Error).message).slice(0, 500);
    }
    if (source === "usdc" && (decoded === null || !watchedTransfer(decoded, classifier))) continue;
    const indexed: IndexedLog = {
      blockNumber,
      logIndex: Number.parseInt(log.logIndex, 16),
      blockHash: log.blockHash,
      txHash: log.transactionHash,
      address: log.address.toLowerCase(),
      topics: log.topics,
      data: log.data,
      source,
      status,
      error,
      decoded,
      entities: [],
      timestamp: timestampOf(blockNumber),
    };
    if (decoded) {
      const handler = HANDLERS[source]?.[decoded.name];
      if (handler) {
        try {
          let keys = handler.entities(decoded.args, indexed);
          // A USDC transfer changes a social vault's balance only if one of its ends is a vault.
          if (source === "usdc") keys = keys.filter((key) => classifier.socialVaults.has(key.slice("svault:".length)));
          indexed.entities = [...new Set(keys)];
        } catch (caught) {
          indexed.status = "malformed";
          indexed.error = String((caught as Error).message).slice(0, 500);
          indexed.decoded = null;
        }
      }
    }
    logs.push(indexed);
  }
  return logs;
}

/**
 * Folds decoded logs into the state and (unless rebuilding) the append-only rows and events.
 * A handler that throws marks its log malformed and the batch goes on: one bad log never
 * stops the indexer.
 */
export function applyLogs(
  logs: IndexedLog[],
  ctx: { chainId: number; state: StateStore; out: BatchOutput; emit: boolean },
  onError: (log: IndexedLog, error: Error) => void,
): void {
  for (const log of creationFirst(logs)) {
    if (!log.decoded) continue;
    const handler = HANDLERS[log.source]?.[log.decoded.name];
    if (!handler) continue;
    try {
      handler.apply(ctx, log.decoded.args, log);
    } catch (error) {
      log.status = "malformed";
      log.error = String((error as Error).message).slice(0, 500);
      onError(log, error as Error);
    }
  }
}

/**
 * Chain order, except that a social vault's SocialVaultCreated is applied before the logs its
 * initializer emitted earlier in the same transaction (the vault's row must exist to take them).
 */
function creationFirst(logs: IndexedLog[]): IndexedLog[] {
  const creations = logs.filter((log) => log.source === "socialVaultFactory" && log.decoded?.name === "SocialVaultCreated");
  if (creations.length === 0) return logs;
  const ordered = logs.filter((log) => !creations.includes(log));
  for (const creation of creations) {
    const vault = lower(creation.decoded!.args[1]);
    const first = ordered.findIndex((log) => log.txHash === creation.txHash && log.address === vault);
    const at = first === -1 ? ordered.findIndex((log) => comesAfter(log, creation)) : first;
    ordered.splice(at === -1 ? ordered.length : at, 0, creation);
  }
  return ordered;
}

function comesAfter(a: IndexedLog, b: IndexedLog): boolean {
  return a.blockNumber > b.blockNumber || (a.blockNumber === b.blockNumber && a.logIndex > b.logIndex);
}
