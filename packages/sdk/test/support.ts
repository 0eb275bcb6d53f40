import { randomUUID } from "node:crypto";
import { ApiError, type ClientOptions, createClient, type TrustMintClient } from "@trustmint/sdk";
import { type ServiceProcess, sharedService } from "../../../test/helpers/service-process.js";

export { type ServiceProcess, sharedService };

export interface SignedIn {
  client: TrustMintClient;
  sub: string;
  id: string;
  wallet: string;
  /** How often the client asked for a token, and with forceRefresh. */
  tokenCalls: { count: number; forced: number };
}

/**
 * A new user of the sandbox, signed in the way an app does it: `getToken` returns the user's
 * current token and fetches a new one from POST /dev/token when there is none or it must refresh.
 */
export async function signIn(
  baseUrl: string,
  prefix: string,
  options: { expiresIn?: number; funds?: number; client?: Omit<ClientOptions, "baseUrl" | "getToken"> } = {},
): Promise<SignedIn> {
  const { sandbox } = createClient({ baseUrl });
  const sub = `${prefix}-${randomUUID()}`;
  let token: string | undefined;
  const tokenCalls = { count: 0, forced: 0 };
  const client = createClient({
    baseUrl,
    ...options.client,
    getToken: async ({ forceRefresh }) => {
      tokenCalls.count++;
      if (forceRefresh) tokenCalls.forced++;
      if (!token || forceRefresh) token = (await sandbox.token({ sub, expiresIn: options.expiresIn ?? 30 * 86_400 })).accessToken;
      return token;
    },
  });
  const me = await client.users.me();
  if (options.funds) await client.sandbox.faucet({ amount: options.funds });
  return { client, sub, id: me.id, wallet: me.walletAddress, tokenCalls };
}

/** The ApiError a call throws (fails the test when it does not throw one). */
export async function apiErrorOf(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error("expected the call to throw an ApiError");
}
