// The hosted checkout's sign-in at the identity provider (D-81): OpenID Connect, authorization
// code with PKCE (RFC 7636), through openid-client (discovery, PKCE, the state and nonce checks,
// the code exchange). The verifier, state and nonce wait in CheckoutSignIn (any API process may
// take the callback); the access token reaches the page in the URL's fragment, which never
// leaves the browser, and the page sends it as its bearer token like any client.
import type * as Oidc from "openid-client";
import type { Clock } from "../../core/clock.js";
import type { Logger } from "../../core/logger.js";
import type { PaymentsRepo } from "../../domain/payments/repo.js";

/** How long a payer has between leaving for the identity provider and coming back. */
const SIGN_IN_TTL_MS = 10 * 60_000;
const SCOPE = "openid profile email";

/** openid-client, loaded with the first sign-in: a process without OIDC_CLIENT_ID never loads it (D-87). */
const loadOidc = () => import("openid-client");

export interface CheckoutSignInConfig {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  /** The API's audience (AUTH_AUDIENCE): asked for, so the access token is one the API takes. */
  audience: string;
  /** PUBLIC_BASE_URL: the callback is `${publicBaseUrl}/checkout/callback`. */
  publicBaseUrl: string;
}

/** A loopback http issuer (a provider on this machine, as in development and tests); anything else must be https. */
const isLoopbackHttp = (url: string) => /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(url);

export function createCheckoutSignIn(deps: {
  config: CheckoutSignInConfig;
  repo: Pick<PaymentsRepo, "startSignIn" | "takeSignIn">;
  clock: Pick<Clock, "now">;
  logger: Pick<Logger, "warn">;
}) {
  const { config } = deps;
  const redirectUri = `${config.publicBaseUrl}/checkout/callback`;
  let discovered: Promise<Oidc.Configuration> | undefined;
  /** The provider's configuration, read once (and again after a failure). */
  const configuration = () => {
    discovered ??= loadOidc()
      .then((oidc) =>
        oidc.discovery(
          new URL(config.issuer),
          config.clientId,
          config.clientSecret,
          config.clientSecret === undefined ? oidc.None() : undefined,
          isLoopbackHttp(config.issuer) ? { execute: [oidc.allowInsecureRequests] } : undefined,
        ),
      )
      .catch((error: unknown) => {
        discovered = undefined;
        throw error;
      });
    return discovered;
  };

  return {
    redirectUri,

    /** Where to send the payer to sign in for `paymentId`. */
    async start(paymentId: string): Promise<string> {
      const oidc = await loadOidc();
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      await deps.repo.startSignIn({ state, paymentId, codeVerifier, nonce, createdAt: deps.clock.now() });
      const url = oidc.buildAuthorizationUrl(await configuration(), {
        redirect_uri: redirectUri,
        scope: SCOPE,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: "S256",
        state,
        nonce,
        audience: config.audience,
      });
      return url.href;
    },

    /**
     * The callback: the sign-in its state names (once), the code exchanged with the verifier,
     * the state and nonce checked. Answers where the page is and the access token, or null when
     * the state is unknown or too old (a second use, a forged or a stale callback).
     */
    async finish(callbackUrl: URL): Promise<{ paymentId: string; accessToken: string; expiresIn: number | undefined } | null> {
      const state = callbackUrl.searchParams.get("state");
      if (!state) return null;
      const signIn = await deps.repo.takeSignIn(state, new Date(deps.clock.now().getTime() - SIGN_IN_TTL_MS));
      if (!signIn) return null;
      const oidc = await loadOidc();
      const tokens = await oidc.authorizationCodeGrant(await configuration(), callbackUrl, {
        pkceCodeVerifier: signIn.codeVerifier,
        expectedState: state,
        expectedNonce: signIn.nonce,
        idTokenExpected: true,
      });
      return { paymentId: signIn.paymentId, accessToken: tokens.access_token, expiresIn: tokens.expires_in };
    },
  };
}

export type CheckoutSignIn = ReturnType<typeof createCheckoutSignIn>;
