import type { SqlQuery } from "../core/db.js";
import { type Column, col, insertRows, timestampLiteral, upsertClause } from "./sql.js";

// The folded state rows the indexer keeps. Money stays bigint; times are seconds since the epoch.

export interface Position {
  owner: string;
  shares: bigint;
  costBasis: bigint;
  realizedYield: bigint;
  deposited: bigint;
  withdrawn: bigint;
  firstDepositAt: number | null;
  lastDepositAt: number | null;
  lastWithdrawAt: number | null;
  /** When the current holding began: the first receipt of shares since the balance was last 0; null while it is 0. */
  heldSince: number | null;
  updatedBlock: number;
}

export interface LoanState {
  loanId: bigint;
  ref: string;
  borrower: string;
  principal: bigint;
  netAmount: bigint;
  interest: bigint;
  insuranceFee: bigint;
  durationDays: number;
  dueDate: number;
  fundedAt: number;
  fundTxHash: string;
  status: "active" | "overdue" | "repaid" | "defaulted";
  totalPaid: bigint;
  remainingBalance: bigint;
  extensions: number;
  lastPaymentAt: number | null;
  closedAt: number | null;
  updatedBlock: number;
}

export interface SocialVaultRow {
  address: string;
  owner: string;
  dailyLimit: bigint;
  timelockDuration: number;
  requiredSignatures: number;
  hasDuressPin: boolean;
  locked: boolean;
  lockedAt: number | null;
  /** When this lock's unlock was asked for (null: not asked, or not locked). */
  unlockRequestedAt: number | null;
  /** The guardians who approved this lock's unlock. */
  unlockApprovers: string[];
  balance: bigint;
  createdAt: number;
  createdTxHash: string;
  updatedBlock: number;
}

export interface GuardianRow {
  vault: string;
  guardian: string;
  activeAt: number;
  removalValidAt: number | null;
  removed: boolean;
  addedTxHash: string;
  updatedBlock: number;
}

export interface WithdrawalRow {
  vault: string;
  requestId: bigint;
  amount: bigint;
  recipient: string;
  executeAfter: number;
  expiresAt: number;
  requiredApprovals: number;
  approvals: number;
  approvers: string[];
  status: "pending" | "executed" | "cancelled" | "expired";
  requestedAt: number;
  requestTxHash: string;
  closedTxHash: string | null;
  closedAt: number | null;
  updatedBlock: number;
}

/** Keys of the derived rows a log changes; stored with the raw log for rollbacks. */
export const entity = {
  position: (owner: string) => `position:${owner}`,
  loan: (loanId: bigint) => `loan:${loanId}`,
  socialVault: (address: string) => `svault:${address}`,
  guardian: (vault: string, guardian: string) => `guardian:${vault}:${guardian}`,
  withdrawal: (vault: string, requestId: bigint) => `withdrawal:${vault}:${requestId}`,
};

interface Table<Row> {
  name: string;
  keys: string[];
  columns: Column[];
  toRow(value: Row): unknown[];
  /** SELECT list that yields the fields of `Row` (times as epoch seconds). */
  select: string;
  fromRow(row: Record<string, unknown>): Row;
}

const epoch = (column: string) => `EXTRACT(EPOCH FROM "${column}")::float8 AS "${column}"`;
const seconds = (value: unknown) => (value === null || value === undefined ? null : Math.round(Number(value)));
const big = (value: unknown) => BigInt(String(value));

const POSITION: Table<Position> = {
  name: "VaultPosition",
  keys: ["chainId", "owner"],
  columns: [
    col("owner", "text"),
    col("shares", "numeric"),
    col("costBasis", "int8"),
    col("realizedYield", "int8"),
    col("deposited", "int8"),
    col("withdrawn", "int8"),
    col("firstDepositAt", "timestamp(3)"),
    col("lastDepositAt", "timestamp(3)"),
    col("lastWithdrawAt", "timestamp(3)"),
    col("heldSince", "timestamp(3)"),
    col("updatedBlock", "int4"),
  ],
  toRow: (p) => [
    p.owner,
    p.shares.toString(),
    p.costBasis.toString(),
    p.realizedYield.toString(),
    p.deposited.toString(),
    p.withdrawn.toString(),
    timestampLiteral(p.firstDepositAt),
    timestampLiteral(p.lastDepositAt),
    timestampLiteral(p.lastWithdrawAt),
    timestampLiteral(p.heldSince),
    p.updatedBlock,
  ],
  select: `"owner", "shares"::text, "costBasis"::text, "realizedYield"::text, "deposited"::text, "withdrawn"::text, ${epoch("firstDepositAt")}, ${epoch("lastDepositAt")}, ${epoch("lastWithdrawAt")}, ${epoch("heldSince")}, "updatedBlock"`,
  fromRow: (r) => ({
    owner: String(r.owner),
    shares: big(r.shares),
    costBasis: big(r.costBasis),
    realizedYield: big(r.realizedYield),
    deposited: big(r.deposited),
    withdrawn: big(r.withdrawn),
    firstDepositAt: seconds(r.firstDepositAt),
    lastDepositAt: seconds(r.lastDepositAt),
    lastWithdrawAt: seconds(r.lastWithdrawAt),
    heldSince: seconds(r.heldSince),
    updatedBlock: Number(r.updatedBlock),
  }),
};

const LOAN: Table<LoanState> = {
  name: "LoanChainState",
  keys: ["chainId", "loanId"],
  columns: [
    col("loanId", "int8"),
    col("ref", "text"),
    col("borrower", "text"),
    col("principal", "int8"),
    col("netAmount", "int8"),
    col("interest", "int8"),
    col("insuranceFee", "int8"),
    col("durationDays", "int4"),
    col("dueDate", "timestamp(3)"),
    col("fundedAt", "timestamp(3)"),
    col("fundTxHash", "text"),
    col("status", "text"),
    col("totalPaid", "int8"),
    col("remainingBalance", "int8"),
    col("extensions", "int4"),
    col("lastPaymentAt", "timestamp(3)"),
    col("closedAt", "timestamp(3)"),
    col("updatedBlock", "int4"),
  ],
  toRow: (l) => [
    l.loanId.toString(),
    l.ref,
    l.borrower,
    l.principal.toString(),
    l.netAmount.toString(),
    l.interest.toString(),
    l.insuranceFee.toString(),
    l.durationDays,
    timestampLiteral(l.dueDate),
    timestampLiteral(l.fundedAt),
    l.fundTxHash,
    l.status,
    l.totalPaid.toString(),
    l.remainingBalance.toString(),
    l.extensions,
    timestampLiteral(l.lastPaymentAt),
    timestampLiteral(l.closedAt),
    l.updatedBlock,
  ],
  select: `"loanId"::text, "ref", "borrower", "principal"::text, "netAmount"::text, "interest"::text, "insuranceFee"::text, "durationDays", ${epoch("dueDate")}, ${epoch("fundedAt")}, "fundTxHash", "status", "totalPaid"::text, "remainingBalance"::text, "extensions", ${epoch("lastPaymentAt")}, ${epoch("closedAt")}, "updatedBlock"`,
  fromRow: (r) => ({
    loanId: big(r.loanId),
    ref: String(r.ref),
    borrower: String(r.borrower),
    principal: big(r.principal),
    netAmount: big(r.netAmount),
    interest: big(r.interest),
    insuranceFee: big(r.insuranceFee),
    durationDays: Number(r.durationDays),
    dueDate: seconds(r.dueDate)!,
    fundedAt: seconds(r.fundedAt)!,
    fundTxHash: String(r.fundTxHash),
    status: r.status as LoanState["status"],
    totalPaid: big(r.totalPaid),
    remainingBalance: big(r.remainingBalance),
    extensions: Number(r.extensions),
    lastPaymentAt: seconds(r.lastPaymentAt),
    closedAt: seconds(r.closedAt),
    updatedBlock: Number(r.updatedBlock),
  }),
};

const SOCIAL_VAULT: Table<SocialVaultRow> = {
  name: "SocialVaultState",
  keys: ["chainId", "address"],
  columns: [
    col("address", "text"),
    col("owner", "text"),
    col("dailyLimit", "int8"),
    col("timelockDuration", "int4"),
    col("requiredSignatures", "int4"),
    col("hasDuressPin", "bool"),
    col("locked", "bool"),
    col("lockedAt", "timestamp(3)"),
    col("unlockRequestedAt", "timestamp(3)"),
    col("unlockApprovers", "text"),
    col("balance", "int8"),
    col("createdAt", "timestamp(3)"),
    col("createdTxHash", "text"),
    col("updatedBlock", "int4"),
  ],
  toRow: (v) => [
    v.address,
    v.owner,
    v.dailyLimit.toString(),
    v.timelockDuration,
    v.requiredSignatures,
    v.hasDuressPin,
    v.locked,
    timestampLiteral(v.lockedAt),
    timestampLiteral(v.unlockRequestedAt),
    v.unlockApprovers.join(" "),
    v.balance.toString(),
    timestampLiteral(v.createdAt),
    v.createdTxHash,
    v.updatedBlock,
  ],
  select: `"address", "owner", "dailyLimit"::text, "timelockDuration", "requiredSignatures", "hasDuressPin", "locked", ${epoch("lockedAt")}, ${epoch("unlockRequestedAt")}, "unlockApprovers", "balance"::text, ${epoch("createdAt")}, "createdTxHash", "updatedBlock"`,
  fromRow: (r) => ({
    address: String(r.address),
    owner: String(r.owner),
    dailyLimit: big(r.dailyLimit),
    timelockDuration: Number(r.timelockDuration),
    requiredSignatures: Number(r.requiredSignatures),
    hasDuressPin: Boolean(r.hasDuressPin),
    locked: Boolean(r.locked),
    lockedAt: seconds(r.lockedAt),
    unlockRequestedAt: seconds(r.unlockRequestedAt),
    unlockApprovers: String(r.unlockApprovers ?? "")
      .split(" ")
      .filter(Boolean),
    balance: big(r.balance),
    createdAt: seconds(r.createdAt)!,
    createdTxHash: String(r.createdTxHash),
    updatedBlock: Number(r.updatedBlock),
  }),
};

const GUARDIAN: Table<GuardianRow> = {
  name: "SocialVaultGuardian",
  keys: ["chainId", "vault", "guardian"],
  columns: [
    col("vault", "text"),
    col("guardian", "text"),
    col("activeAt", "timestamp(3)"),
    col("removalValidAt", "timestamp(3)"),
    col("removed", "bool"),
    col("addedTxHash", "text"),
    col("updatedBlock", "int4"),
  ],
  toRow: (g) => [
    g.vault,
    g.guardian,
    timestampLiteral(g.activeAt),
    timestampLiteral(g.removalValidAt),
    g.removed,
    g.addedTxHash,
    g.updatedBlock,
  ],
  select: `"vault", "guardian", ${epoch("activeAt")}, ${epoch("removalValidAt")}, "removed", "addedTxHash", "updatedBlock"`,
  fromRow: (r) => ({
    vault: String(r.vault),
    guardian: String(r.guardian),
    activeAt: seconds(r.activeAt)!,
    removalValidAt: seconds(r.removalValidAt),
    removed: Boolean(r.removed),
    addedTxHash: String(r.addedTxHash),
    updatedBlock: Number(r.updatedBlock),
  }),
};

const WITHDRAWAL: Table<WithdrawalRow> = {
  name: "SocialVaultWithdrawal",
  keys: ["chainId", "vault", "requestId"],
  columns: [
    col("vault", "text"),
    col("requestId", "numeric"),
    col("amount", "int8"),
    col("recipient", "text"),
    col("executeAfter", "timestamp(3)"),
    col("expiresAt", "timestamp(3)"),
    col("requiredApprovals", "int4"),
    col("approvals", "int4"),
    col("approvers", "text"),
    col("status", "text"),
    col("requestedAt", "timestamp(3)"),
    col("requestTxHash", "text"),
    col("closedTxHash", "text"),
    col("closedAt", "timestamp(3)"),
    col("updatedBlock", "int4"),
  ],
  toRow: (w) => [
    w.vault,
    w.requestId.toString(),
    w.amount.toString(),
    w.recipient,
    timestampLiteral(w.executeAfter),
    timestampLiteral(w.expiresAt),
    w.requiredApprovals,
    w.approvals,
    w.approvers.join(" "),
    w.status,
    timestampLiteral(w.requestedAt),
    w.requestTxHash,
    w.closedTxHash,
    timestampLiteral(w.closedAt),
    w.updatedBlock,
  ],
  select: `"vault", "requestId"::text, "amount"::text, "recipient", ${epoch("executeAfter")}, ${epoch("expiresAt")}, "requiredApprovals", "approvals", "approvers", "status", ${epoch("requestedAt")}, "requestTxHash", "closedTxHash", ${epoch("closedAt")}, "updatedBlock"`,
  fromRow: (r) => ({
    vault: String(r.vault),
    requestId: big(r.requestId),
    amount: big(r.amount),
    recipient: String(r.recipient),
    executeAfter: seconds(r.executeAfter)!,
    expiresAt: seconds(r.expiresAt)!,
    requiredApprovals: Number(r.requiredApprovals),
    approvals: Number(r.approvals),
    approvers: String(r.approvers ?? "")
      .split(" ")
      .filter(Boolean),
    status: r.status as WithdrawalRow["status"],
    requestedAt: seconds(r.requestedAt)!,
    requestTxHash: String(r.requestTxHash),
    closedTxHash: r.closedTxHash === null ? null : String(r.closedTxHash),
    closedAt: seconds(r.closedAt),
    updatedBlock: Number(r.updatedBlock),
  }),
};

export type StateChanges = { table: Table<unknown>; rows: unknown[][] }[];

/** Every state table with how its entity key reads (`kind:part:part`). */
const TABLES = {
  position: { table: POSITION, where: (parts: string[][]) => ({ sql: `"owner" = ANY($2::text[])`, params: [parts.map((p) => p[0])] }) },
  loan: { table: LOAN, where: (parts: string[][]) => ({ sql: `"loanId" = ANY($2::int8[])`, params: [parts.map((p) => p[0])] }) },
  svault: { table: SOCIAL_VAULT, where: (parts: string[][]) => ({ sql: `"address" = ANY($2::text[])`, params: [parts.map((p) => p[0])] }) },
  guardian: {
    table: GUARDIAN,
    where: (parts: string[][]) => ({
      sql: `("vault", "guardian") IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
      params: [parts.map((p) => p[0]), parts.map((p) => p[1])],
    }),
  },
  withdrawal: {
    table: WITHDRAWAL,
    where: (parts: string[][]) => ({
      sql: `("vault", "requestId") IN (SELECT * FROM unnest($2::text[], $3::numeric[]))`,
      params: [parts.map((p) => p[0]), parts.map((p) => p[1])],
    }),
  },
} as const;

type Kind = keyof typeof TABLES;

/** Groups entity keys by kind: `{ position: [["0xabc"]], guardian: [["0xv", "0xg"]] }`. */
function byKind(keys: Iterable<string>): Map<Kind, string[][]> {
  const groups = new Map<Kind, string[][]>();
  for (const key of keys) {
    const [kind, ...parts] = key.split(":");
    if (!(kind! in TABLES)) continue;
    const list = groups.get(kind as Kind) ?? [];
    list.push(parts);
    groups.set(kind as Kind, list);
  }
  return groups;
}

/**
 * The state rows of one batch, in memory: loaded once for the entities the batch touches,
 * folded log by log, written back once. In a rollback's rebuild, `scope` limits folding to
 * the rebuilt entities: a log that also touches another entity must not change that one twice.
 */
export class StateStore {
  readonly positions = new Map<string, Position>();
  readonly loans = new Map<string, LoanState>();
  readonly vaults = new Map<string, SocialVaultRow>();
  readonly guardians = new Map<string, GuardianRow>();
  readonly withdrawals = new Map<string, WithdrawalRow>();
  private readonly dirty = new Set<string>();
  /** Keys whose row is in memory or known to be absent from the database. */
  private readonly known = new Set<string>();

  constructor(private readonly scope?: Set<string>) {}

  /** How many rows are held; the indexer drops the cache past a bound. */
  get size(): number {
    return this.known.size;
  }

  inScope(key: string): boolean {
    return this.scope === undefined || this.scope.has(key);
  }

  touch(key: string): void {
    this.dirty.add(key);
  }

  /**
   * Reads the rows of `keys` not already held. Rows stay across batches: the next batch folds on
   * what this one produced while its commit is still in flight.
   */
  async load(query: SqlQuery, chainId: number, keys: Iterable<string>): Promise<void> {
    const missing = [...keys].filter((key) => !this.known.has(key));
    for (const key of missing) this.known.add(key);
    for (const [kind, parts] of byKind(missing)) {
      const { table, where } = TABLES[kind];
      const clause = where(parts);
      const { rows } = await query(`SELECT ${table.select} FROM "${table.name}" WHERE "chainId" = $1 AND ${clause.sql}`, [
        chainId,
        ...clause.params,
      ]);
      for (const row of rows) this.put(kind, row);
    }
  }

  private put(kind: Kind, row: Record<string, unknown>): void {
    switch (kind) {
      case "position": {
        const value = POSITION.fromRow(row);
        this.positions.set(entity.position(value.owner), value);
        break;
      }
      case "loan": {
        const value = LOAN.fromRow(row);
        this.loans.set(entity.loan(value.loanId), value);
        break;
      }
      case "svault": {
        const value = SOCIAL_VAULT.fromRow(row);
        this.vaults.set(entity.socialVault(value.address), value);
        break;
      }
      case "guardian": {
        const value = GUARDIAN.fromRow(row);
        this.guardians.set(entity.guardian(value.vault, value.guardian), value);
        break;
      }
      case "withdrawal": {
        const value = WITHDRAWAL.fromRow(row);
        this.withdrawals.set(entity.withdrawal(value.vault, value.requestId), value);
        break;
      }
    }
  }

  /**
   * The rows changed since the last call, serialised now: later folds may change the objects
   * while these rows are being written.
   */
  takeChanges(): StateChanges {
    const pick = <Row>(table: Table<Row>, values: Map<string, Row>) => ({
      table: table as Table<unknown>,
      rows: [...this.dirty].flatMap((key) => {
        const value = values.get(key);
        return value === undefined ? [] : [table.toRow(value)];
      }),
    });
    const changes = [
      pick(POSITION, this.positions),
      pick(LOAN, this.loans),
      pick(SOCIAL_VAULT, this.vaults),
      pick(GUARDIAN, this.guardians),
      pick(WITHDRAWAL, this.withdrawals),
    ];
    this.dirty.clear();
    return changes;
  }

  /** Writes changes taken by `takeChanges` (one upsert per table). */
  static async write(query: SqlQuery, chainId: number, changes: StateChanges): Promise<void> {
    for (const { table, rows } of changes) {
      await insertRows(query, table.name, table.columns, rows, {
        constants: { chainId: { type: "int4", value: chainId } },
        onConflict: upsertClause(table.keys, table.columns),
      });
    }
  }

  /** Deletes the state rows of `keys` (a rollback rebuilds them from the remaining logs). */
  static async delete(query: SqlQuery, chainId: number, keys: Iterable<string>): Promise<void> {
    for (const [kind, parts] of byKind(keys)) {
      const { table, where } = TABLES[kind];
      const clause = where(parts);
      await query(`DELETE FROM "${table.name}" WHERE "chainId" = $1 AND ${clause.sql}`, [chainId, ...clause.params]);
    }
  }
}
