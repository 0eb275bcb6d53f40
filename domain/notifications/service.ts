// Notifications for users: the in-app feed, preferences, push devices, and `notify`, the one
// code path every notification takes (from domain events, and the test route's).

import { randomUUID } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { isUuid } from "../../core/text.js";
import type { Db, Tx } from "../db.js";
import { AppError } from "../errors.js";
import { type PageRequest, paginate } from "../pagination.js";
import type { UserRecord, UsersRepo } from "../users/repo.js";
import { type EventContext, eventContextNeeds, type NotifiableEvent, notificationsFor } from "./from-events.js";
import {
  applyPatch,
  type Delivery,
  deliveryFor,
  type Preferences,
  type PreferencesPatch,
  preferencesOf,
  readStored,
  switchesOf,
  touchesStored,
} from "./preferences.js";
import type { ListFilter, NotificationRow, NotificationsRepo } from "./repo.js";
import { languageOf, prepareFormatters, render } from "./templates.js";
import type { Channel, NotificationItem, NotificationType } from "./types.js";

/** A notification as the API shows it (service-spec part 2). */
export interface NotificationView {
  id: string;
  type: NotificationType;
  title: string;
  body: string;
  read: boolean;
  data: Record<string, unknown>;
  createdAt: string;
}

/** A notification just written, with where it goes besides the feed. */
export interface Written {
  notification: NotificationView & { userId: string };
  delivery: Delivery;
}

/**
 * Hands written notifications to the channels (push, e-mail, SMS). Called inside the
 * transaction that wrote the rows, with them: a deliverer enqueues its work there (so a
 * rolled-back notification sends nothing) and never sends from here.
 */
export type Deliver = (written: Written[], tx: Tx) => Promise<void>;

export interface NotificationsServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  repo: NotificationsRepo;
  /** The User row: the two `enabled` switches are its settings (preferences.ts). */
  users: Pick<UsersRepo, "update">;
  /** The wallets of a social vault's guardians active at an instant (domain/social-vault/repo.ts). */
  activeGuardiansOf(tx: Tx, vault: string, at: Date): Promise<string[]>;
  /** The channel deliveries; without it notifications stay in the app. */
  deliver?: Deliver;
}

/** The push token formats of the provider (Expo): `ExponentPushToken[...]` and `ExpoPushToken[...]`. */
export const PUSH_TOKEN = /^Expo(?:nent)?PushToken\[[A-Za-z0-9_-]{1,200}\]$/;
/**
 * Push devices one account keeps (service-spec: not shown; D-80): a phone, a tablet, a browser or
 * two, and room for reinstalls. A registration past it replaces the least recently registered.
 */
export const MAX_PUSH_DEVICES = 10;

export const viewOf = (row: NotificationRow): NotificationView => ({
  id: row.id,
  type: row.type as NotificationType,
  title: row.title,
  body: row.body,
  read: row.read,
  data: row.data,
  createdAt: row.createdAt.toISOString(),
});

const notFound = () => new AppError("NOTIFICATION_NOT_FOUND", "Notification not found");

/** INVALID_TOKEN for a push token that is not an Expo one (a route's area rule, and the registration's first check). */
function checkPushToken(token: unknown) {
  if (typeof token === "string" && !PUSH_TOKEN.test(token)) {
    throw new AppError("INVALID_TOKEN", "The push token is not an Expo push token (ExponentPushToken[...] or ExpoPushToken[...])", {
      field: "token",
      reason: "must be an Expo push token: ExponentPushToken[...] or ExpoPushToken[...]",
    });
  }
}

export function createNotificationsService({ db, clock, repo, users, activeGuardiansOf, deliver }: NotificationsServiceDeps) {
  prepareFormatters();
  /**
   * An id that is no UUID names no notification: the same 404 as an unknown one (one answer
   * for every id that is not the caller's), and no malformed value reaches the uuid column.
   */
  const ownId = (id: string) => {
    if (!isUuid(id)) throw notFound();
    return id.toLowerCase();
  };

  async function preferencesFor(tx: Tx, user: { id: string; settingsNotifications: boolean; settingsEmailAlerts: boolean }) {
    return preferencesOf(readStored(await repo.storedPreferences(tx, user.id)), user);
  }

  /**
   * Writes one notification in the recipient's language, in the caller's transaction, and hands
   * it to `deliver`. Null (nothing written) for a user who does not exist or asked for their
   * account's deletion, and for an item already written (same source, user and type).
   */
  async function notify(tx: Tx, item: NotificationItem, now: Date = clock.now()): Promise<NotificationView | null> {
    return (await notifyMany(tx, [item], now))[0] ?? null;
  }

  /**
   * `notify` for many items with a few statements whatever their number (one read of the
   * recipients and their preferences, one insert, one `deliver`): the fan-out's path. Answers
   * item by item, null where nothing was written.
   */
  async function notifyMany(tx: Tx, items: NotificationItem[], now: Date = clock.now()): Promise<(NotificationView | null)[]> {
    return write(tx, items, now, (delivery) => delivery);
  }

  async function write(tx: Tx, items: NotificationItem[], now: Date, route: (delivery: Delivery) => Delivery) {
    const recipients = await repo.recipients(
      tx,
      items.map((item) => item.userId),
    );
    const planned = items.map((item) => {
      const recipient = recipients.get(item.userId);
      if (!recipient) return null;
      const preferences = preferencesOf(readStored(recipient.storedPreferences), recipient);
      const text = render(item.template ?? item.type, item.values, {
        language: languageOf(recipient.settingsLanguage),
        // Times are shown in the zone the user gave for their quiet hours, else in UTC.
        timeZone: preferences.quietHours?.timeZone ?? "UTC",
      });
      const row = {
        id: randomUUID(),
        userId: recipient.id,
        type: item.type,
        ...text,
        data: item.data,
        createdAt: now,
        dedupeKey: item.sourceId === null ? null : `${item.sourceId}:${recipient.id}:${item.type}`,
      };
      return { item, row, preferences };
    });
    const created = await repo.insertMany(
      tx,
      planned.flatMap((plan) => (plan ? [plan.row] : [])),
    );
    const views = planned.map((plan) => {
      const row = plan && created.get(plan.row.id);
      return row ? viewOf(row) : null;
    });
    const written = planned.flatMap((plan, i) =>
      plan && views[i]
        ? [{ notification: { ...views[i], userId: plan.row.userId }, delivery: route(deliveryFor(plan.preferences, plan.item, now)) }]
        : [],
    );
    if (written.length > 0) await deliver?.(written, tx);
    return views;
  }

  /** What `notificationsFor` needs of the database for these events, read in the caller's transaction with one query per kind of need. */
  async function contextFor(tx: Tx, events: (NotifiableEvent & { createdAt: Date })[]): Promise<(event: NotifiableEvent) => EventContext> {
    const needs = events.map((event) => ({ event, needs: eventContextNeeds(event) }));
    // A vault's active guardians when the event happened: rare (withdrawal requests), one query each.
    const guardians = new Map<string, string[]>();
    const guardiansKey = (vault: string, event: { id: string }) => `${event.id}:${vault.toLowerCase()}`;
    for (const { event, needs: need } of needs) {
      for (const vault of need.guardiansOf) guardians.set(guardiansKey(vault, event), await activeGuardiansOf(tx, vault, event.createdAt));
    }
    const byWallet = await repo.usersByWallets(tx, [
      ...needs.flatMap(({ needs: need }) => need.wallets),
      ...[...guardians.values()].flat(),
    ]);
    const names = await repo.displayNames(
      tx,
      needs.flatMap(({ needs: need }) => need.userIds),
    );
    return (event) => ({
      userIdByWallet: (address) => byWallet.get(address.toLowerCase()) ?? null,
      displayNameOf: (userId) => names.get(userId) ?? null,
      activeGuardiansOf: (vault) => guardians.get(guardiansKey(vault, event)) ?? [],
    });
  }

  /**
   * Corrects what these items announced (D-94: a reorganisation removed their facts): each row
   * written for them gets a `transaction_reverted` naming it, and gives up its dedupe key, so the
   * fact, if it comes back, is announced again. Items never written are passed over.
   */
  async function retract(tx: Tx, items: NotificationItem[], now: Date = clock.now()) {
    const keyOf = (item: { sourceId: string | null; userId: string; type: string }) => `${item.sourceId}:${item.userId}:${item.type}`;
    const byKey = new Map(items.filter((item) => item.sourceId !== null).map((item) => [keyOf(item), item]));
    if (byKey.size === 0) return [];
    const released = await repo.releaseKeys(tx, [...byKey.keys()]);
    const corrections = released.map((row): NotificationItem => {
      const item = [...byKey.values()].find((one) => one.userId === row.userId && one.type === row.type)!;
      return {
        userId: row.userId,
        type: "transaction_reverted",
        data: { notificationId: row.id, revertedType: row.type, ...item.data },
        values: { title: row.title },
        group: item.group,
        silent: item.silent,
        urgent: false,
        sourceId: `reverted:${row.id}`,
      };
    });
    return notifyMany(tx, corrections, now);
  }

  return {
    notify,
    notifyMany,
    retract,

    /**
     * The notifications of outbox events (the fan-out calls it for a page of events, then
     * `notifyMany`, scheduling the items with a `notBefore` still ahead). The guardians asked to
     * approve a withdrawal are those active when the event happened (`createdAt`).
     */
    async itemsFor(tx: Tx, events: (NotifiableEvent & { createdAt: Date })[]): Promise<NotificationItem[]> {
      const contextOf = await contextFor(tx, events);
      return events.flatMap((event) => notificationsFor(event, contextOf(event)));
    },

    async list(user: Pick<UserRecord, "id">, filter: ListFilter, page: PageRequest) {
      const [{ data, pagination }, unreadCount] = await Promise.all([
        paginate(page, repo.feed(user.id, filter)),
        repo.unreadCount(user.id),
      ]);
      return { data: data.map(viewOf), pagination, extra: { unreadCount } };
    },

    async unreadCount(user: Pick<UserRecord, "id">) {
      return { unreadCount: await repo.unreadCount(user.id) };
    },

    async markRead(user: Pick<UserRecord, "id">, notificationId: string) {
      const id = ownId(notificationId);
      if (!(await repo.markRead(user.id, id))) throw notFound();
      return { id, read: true as const };
    },

    async markAllRead(user: Pick<UserRecord, "id">) {
      return { markedRead: await repo.markAllRead(user.id) };
    },

    async remove(user: Pick<UserRecord, "id">, notificationId: string): Promise<void> {
      if (!(await repo.remove(user.id, ownId(notificationId)))) throw notFound();
    },

    async preferences(user: UserRecord): Promise<Preferences> {
      return preferencesFor(db.prisma, user);
    },

    /**
     * Applies a partial change and answers the full result. The two `enabled` switches are
     * written to the User row through the users repository (which drops its cached row), the
     * rest to the preferences row; a change of neither writes nothing.
     */
    async updatePreferences(user: UserRecord, patch: PreferencesPatch): Promise<Preferences> {
      const switches = switchesOf(patch);
      const now = clock.now();
      const current = Object.keys(switches).length > 0 ? await users.update(user.id, switches, now) : user;
      const stored = touchesStored(patch)
        ? await repo.updatePreferences(user.id, now, (json) => applyPatch(readStored(json), patch))
        : readStored(await repo.storedPreferences(db.prisma, user.id));
      return preferencesOf(stored, current);
    },

    checkPushToken,

    async registerPush(user: Pick<UserRecord, "id">, device: { token: string; platform: string; deviceId: string }) {
      checkPushToken(device.token);
      const removed = await repo.registerDevice({ userId: user.id, ...device, now: clock.now() }, MAX_PUSH_DEVICES);
      return {
        data: { registered: true as const, deviceId: device.deviceId },
        message:
          removed.length === 0
            ? undefined
            : `An account has at most ${MAX_PUSH_DEVICES} push devices: the least recently registered (${removed.join(", ")}) no longer receives pushes`,
      };
    },

    /** Idempotent: an app unregisters on sign-out and may retry, so an unknown device id is no error. */
    async unregisterPush(user: Pick<UserRecord, "id">, deviceId: string): Promise<string> {
      return (await repo.unregisterDevice(user.id, deviceId)) ? "Device unregistered" : "No device was registered under this id";
    },

    /**
     * A test notification for the caller through `notify`, as real ones go: an in-app row
     * (typed trust_score_updated, the most harmless type, with `data.test`) in their language,
     * handed to the channel asked for only, whatever the preferences say (the user asked for it).
     */
    async sendTest(user: Pick<UserRecord, "id">, channel: "push" | "email" | "in_app"): Promise<NotificationView | null> {
      const item: NotificationItem = {
        userId: user.id,
        type: "trust_score_updated",
        template: "test",
        data: { test: true, channel },
        values: { channel },
        group: null,
        silent: false,
        urgent: false,
        sourceId: null,
      };
      const channels: Channel[] = channel === "in_app" ? [] : [channel];
      return db.prisma.$transaction(async (tx) => (await write(tx, [item], clock.now(), () => ({ channels, holdUntil: null })))[0] ?? null);
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
