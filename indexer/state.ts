import type { SqlQuery } from "../core/db.js";
import { insertRows, upsertClause } from "./sql.js";
import { addresses, bool, int4, int8, nullable, numeric, type RowOf, seconds, type Table, table, text, textOf } from "./table.js";

// The folded state rows the indexer keeps, each table declared once (as in prisma/schema.prisma).
// Money stays bigint; times are seconds since the epoch.

const POSITION = table({
  name: "VaultPosition",
  keys: ["chainId", "owner"],
  fields: {
    owner: text,
    shares: numeric,
    costBasis: int8,
    realizedYield: int8,
    deposited: int8,
    withdrawn: int8,
    firstDepositAt: nullable(seconds),
    lastDepositAt: nullable(seconds),
    lastWithdrawAt: nullable(seconds),
    /** When the current holding began: the first receipt of shares since the balance was last 0; null while it is 0. */
    heldSince: nullable(seconds),
    /** The highest costBasis the position ever had (the most of the owner's own USDC held at once). */
    peakCostBasis: int8,
    updatedBlock: int4,
  },
});
export type Position = RowOf<typeof POSITION>;

const LOAN = table({
  name: "LoanChainState",
  keys: ["chainId", "loanId"],
  fields: {
    loanId: int8,
    ref: text,
    borrower: text,
    principal: int8,
    netAmount: int8,
    interest: int8,
    insuranceFee: int8,
    durationDays: int4,
    dueDate: seconds,
    fundedAt: seconds,
    fundTxHash: text,
    status: textOf<"active" | "overdue" | "repaid" | "defaulted">(),
    totalPaid: int8,
    remainingBalance: int8,
    extensions: int4,
    lastPaymentAt: nullable(seconds),
    closedAt: nullable(seconds),
    /** Repaid by payers other than the borrower (a refund through the router, a third party). */
    paidByOthers: int8,
    updatedBlock: int4,
  },
});
export type LoanState = RowOf<typeof LOAN>;

const SOCIAL_VAULT = table({
  name: "SocialVaultState",
  keys: ["chainId", "address"],
  fields: {
    address: text,
    owner: text,
    dailyLimit: int8,
    timelockDuration: int4,
    requiredSignatures: int4,
    hasDuressPin: bool,
    locked: bool,
    lockedAt: nullable(seconds),
    /** When this lock's unlock was asked for (null: not asked, or not locked). */
    unlockRequestedAt: nullable(seconds),
    /** The guardians who approved this lock's unlock. */
    unlockApprovers: addresses,
    balance: int8,
    /** The pending recovery's new owner (null: none) and when it can be finalized. */
    recoveryOwner: nullable(text),
    recoveryExecutableAt: nullable(seconds),
    createdAt: seconds,
    createdTxHash: text,
    updatedBlock: int4,
  },
});
export type SocialVaultRow = RowOf<typeof SOCIAL_VAULT>;

const GUARDIAN = table({
  name: "SocialVaultGuardian",
  keys: ["chainId", "vault", "guardian"],
  fields: {
    vault: text,
    guardian: text,
    activeAt: seconds,
    removalValidAt: nullable(seconds),
    removed: bool,
    addedTxHash: text,
    updatedBlock: int4,
  },
});
export type GuardianRow = RowOf<typeof GUARDIAN>;

const WITHDRAWAL = table({
  name: "SocialVaultWithdrawal",
  keys: ["chainId", "vault", "requestId"],
  fields: {
    vault: text,
    requestId: numeric,
    amount: int8,
    recipient: text,
    executeAfter: seconds,
    expiresAt: seconds,
    requiredApprovals: int4,
    approvals: int4,
    approvers: addresses,
    status: textOf<"pending" | "executed" | "cancelled" | "expired">(),
    requestedAt: seconds,
    requestTxHash: text,
    closedTxHash: nullable(text),
    closedAt: nullable(seconds),
    updatedBlock: int4,
  },
});
export type WithdrawalRow = RowOf<typeof WITHDRAWAL>;

/** Keys of the derived rows a log changes; stored with the raw log for rollbacks. */
export const entity = {
  position: (owner: string) => `position:${owner}`,
  loan: (loanId: bigint) => `loan:${loanId}`,
  socialVault: (address: string) => `svault:${address}`,
  guardian: (vault: string, guardian: string) => `guardian:${vault}:${guardian}`,
  withdrawal: (vault: string, requestId: bigint) => `withdrawal:${vault}:${requestId}`,
};

export type StateChanges = { table: Table<unknown>; rows: unknown[][] }[];

/** A kind of entity key (`kind:part:part`, the parts its table's key fields): its table and where the store holds its rows. */
interface Kind<Row> {
  table: Table<Row>;
  rows(state: StateStore): Map<string, Row>;
  key(row: Row): string;
}

const stateKind = <Row>(definition: Kind<Row>) => definition as Kind<unknown>;

const KINDS = {
  position: stateKind({ table: POSITION, rows: (s) => s.positions, key: (p) => entity.position(p.owner) }),
  loan: stateKind({ table: LOAN, rows: (s) => s.loans, key: (l) => entity.loan(l.loanId) }),
  svault: stateKind({ table: SOCIAL_VAULT, rows: (s) => s.vaults, key: (v) => entity.socialVault(v.address) }),
  guardian: stateKind({ table: GUARDIAN, rows: (s) => s.guardians, key: (g) => entity.guardian(g.vault, g.guardian) }),
  withdrawal: stateKind({ table: WITHDRAWAL, rows: (s) => s.withdrawals, key: (w) => entity.withdrawal(w.vault, w.requestId) }),
};

type KindName = keyof typeof KINDS;

/** Groups entity keys by kind: `{ position: [["0xabc"]], guardian: [["0xv", "0xg"]] }`. */
function byKind(keys: Iterable<string>): Map<KindName, string[][]> {
  const groups = new Map<KindName, string[][]>();
  for (const key of keys) {
    const [kind, ...parts] = key.split(":");
    if (!(kind! in KINDS)) continue;
    const list = groups.get(kind as KindName) ?? [];
    list.push(parts);
    groups.set(kind as KindName, list);
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
  /** USDC a social vault's address received before its row exists (its creation takes it). Never written. */
  readonly early = new Map<string, bigint>();
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
      const { table, rows: held, key } = KINDS[kind];
      const clause = table.whereKeys(parts);
      const { rows } = await query(`SELECT ${table.select} FROM "${table.name}" WHERE "chainId" = $1 AND ${clause.sql}`, [
        chainId,
        ...clause.params,
      ]);
      for (const row of rows) {
        const value = table.fromRow(row);
        held(this).set(key(value), value);
      }
    }
  }

  /**
   * The rows changed since the last call, serialised now: later folds may change the objects
   * while these rows are being written.
   */
  takeChanges(): StateChanges {
    const changes = Object.values(KINDS).map(({ table, rows }) => {
      const values = rows(this);
      return {
        table,
        rows: [...this.dirty].flatMap((key) => {
          const value = values.get(key);
          return value === undefined ? [] : [table.toRow(value)];
        }),
      };
    });
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
      const { table } = KINDS[kind];
      const clause = table.whereKeys(parts);
      await query(`DELETE FROM "${table.name}" WHERE "chainId" = $1 AND ${clause.sql}`, [chainId, ...clause.params]);
    }
  }
}
