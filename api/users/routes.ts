import { usersModule } from "../../domain/users/module.js";
import type { UsersService } from "../../domain/users/service.js";
import type { XpService } from "../../domain/xp/service.js";
import { pageRequestOf } from "../http/pagination.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  activityEntry,
  activityQuery,
  deleteMeBody,
  deleteMeExtra,
  exportResponse,
  guardian,
  patchMeBody,
  patchMeResponse,
  privateUser,
  publicUser,
  userIdParams,
  xpResponse,
} from "./schemas.js";

export function userRoutes({ users, xp }: { users: UsersService; xp: Pick<XpService, "view" | "activity"> }): RouteSpec[] {
  return routesOf(usersModule, [
    defineRoute({
      method: "get",
      path: "/v1/users/me",
      operationId: "getMe",
      summary: "Your profile (private view)",
      description: "The first authenticated request of a token subject creates the user and its managed wallet.",
      auth: "user",
      response: privateUser,
      handler: async ({ principal }) => ({ data: users.privateView(principal().user) }),
    }),
    defineRoute({
      method: "patch",
      path: "/v1/users/me",
      operationId: "updateMe",
      summary: "Update your display name and settings",
      auth: "user",
      body: patchMeBody,
      response: patchMeResponse,
      handler: async ({ body, principal }) => ({ data: await users.updateMe(principal().user, body) }),
    }),
    defineRoute({
      method: "delete",
      path: "/v1/users/me",
      operationId: "deleteMe",
      summary: "Delete your account",
      description:
        "Irreversible. The account is unusable at once (its tokens and API keys are refused with 403); personal data is erased at `deletionDate` (30 days on the service clock). On-chain data cannot be deleted.",
      auth: "token",
      body: deleteMeBody,
      envelopeExtra: deleteMeExtra,
      errors: ["FORBIDDEN"],
      handler: async ({ principal }) => {
        const deletionDate = await users.deleteMe(principal().user);
        return { message: "Account scheduled for deletion", extra: { deletionDate: deletionDate.toISOString() } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/users/me/activity",
      operationId: "listMyActivity",
      summary: "Your activity feed, newest first",
      auth: "user",
      query: activityQuery,
      response: activityEntry.array(),
      paginated: true,
      handler: async ({ query, principal }) => xp.activity(principal().user, query, pageRequestOf(query)),
    }),
    defineRoute({
      method: "get",
      path: "/v1/users/me/guardians",
      operationId: "listMyGuardians",
      summary: "The guardians of your social vault",
      auth: "user",
      response: guardian.array(),
      handler: async ({ principal }) => ({ data: await users.guardians(principal().user) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/users/me/export",
      operationId: "exportMe",
      summary: "Everything the service holds about you",
      auth: "token",
      response: exportResponse,
      errors: ["FORBIDDEN"],
      handler: async ({ principal }) => ({ data: await users.exportAll(principal().user) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/users/{userId}",
      operationId: "getUser",
      summary: "A user's public profile",
      auth: "none",
      params: userIdParams,
      response: publicUser,
      errors: ["USER_NOT_FOUND"],
      handler: async ({ params }) => ({ data: await users.getPublic(params.userId) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/users/{userId}/xp",
      operationId: "getUserXp",
      summary: "A user's XP, level and badges",
      description: "XP, level and badges are public achievements: any authenticated caller may read them.",
      auth: "user",
      params: userIdParams,
      response: xpResponse,
      errors: ["USER_NOT_FOUND"],
      handler: async ({ params }) => ({ data: await xp.view(params.userId) }),
    }),
  ]);
}
