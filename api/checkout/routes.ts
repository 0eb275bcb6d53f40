import path from "node:path";
import express, { type Request, type Response, Router } from "express";
import { ROOT } from "../../core/paths.js";
import { AppError } from "../../domain/errors.js";
import type { Checkout } from "../../domain/payments/checkout.js";
import { languageOf, renderCheckout, renderMessage, renderNotFound } from "./page.js";
import type { CheckoutSignIn } from "./sign-in.js";

/**
 * The page and its files allow only this origin: no inline script, no other host for scripts,
 * styles, images or requests, never framed (clickjacking a payment button).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

function pageHeaders(res: Response) {
  res.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Content-Language", res.getHeader("Content-Language") ?? "en");
}

/**
 * `GET /checkout/{paymentId}`: the hosted checkout page (D-81), its script and styles, and the
 * payer's sign-in at the identity provider (`/checkout/{paymentId}/signin`, `/checkout/callback`)
 * where one is configured.
 */
export function checkoutRoutes({
  checkout,
  sandbox,
  signIn,
  wallet,
}: {
  checkout: Pick<Checkout, "checkout">;
  sandbox: boolean;
  signIn: CheckoutSignIn | undefined;
  /** Whether a payer may sign in with their browser wallet (Sign-In with Ethereum is served). */
  wallet: boolean;
}): Router {
  const router = Router();
  router.use(
    "/checkout/assets",
    (_req, res, next) => {
      pageHeaders(res);
      next();
    },
    express.static(path.join(ROOT, "api", "checkout", "assets"), { index: false, maxAge: "1h" }),
    // Any other asset: a plain 404, nothing logged (a probe or a stale link is not the server's error).
    (_req: Request, res: Response) => {
      res.status(404).type("text/plain").send("Not found");
    },
  );
  if (signIn) {
    router.get("/checkout/callback", async (req: Request, res: Response, next) => {
      const language = languageOf(req.query.lang, req.header("accept-language"));
      pageHeaders(res);
      try {
        // The redirect URI as sent (behind a proxy the request's own host may differ), with what the provider added.
        const at = req.originalUrl.indexOf("?");
        const callback = new URL(`${signIn.redirectUri}${at === -1 ? "" : req.originalUrl.slice(at)}`);
        const done = callback.searchParams.get("error") ? null : await signIn.finish(callback);
        if (!done) {
          res.status(400).type("html").send(renderMessage(language, "signInFailed"));
          return;
        }
        // The token in the fragment: the browser keeps it, no server or log sees it.
        const fragment = new URLSearchParams({
          access_token: done.accessToken,
          ...(done.expiresIn ? { expires_in: String(done.expiresIn) } : {}),
        });
        res.redirect(303, `/checkout/${done.paymentId}#${fragment.toString()}`);
      } catch (error) {
        next(error);
      }
    });
    router.get("/checkout/:paymentId/signin", async (req: Request, res: Response, next) => {
      try {
        const payment = await checkout.checkout(String(req.params.paymentId));
        res.redirect(302, await signIn.start(payment.id));
      } catch (error) {
        if (error instanceof AppError && error.code === "PAYMENT_NOT_FOUND") {
          pageHeaders(res);
          res
            .status(404)
            .type("html")
            .send(renderNotFound(languageOf(req.query.lang, req.header("accept-language"))));
          return;
        }
        next(error);
      }
    });
  }
  router.get("/checkout/:paymentId", async (req: Request, res: Response, next) => {
    const language = languageOf(req.query.lang, req.header("accept-language"));
    res.setHeader("Content-Language", language);
    pageHeaders(res);
    try {
      const payment = await checkout.checkout(String(req.params.paymentId));
      res
        .status(200)
        .type("html")
        .send(renderCheckout({ ...payment, sandbox, signIn: signIn !== undefined, wallet }, language));
    } catch (error) {
      if (error instanceof AppError && error.code === "PAYMENT_NOT_FOUND") {
        res.status(404).type("html").send(renderNotFound(language));
        return;
      }
      next(error);
    }
  });
  return router;
}
