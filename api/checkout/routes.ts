import path from "node:path";
import express, { type Request, type Response, Router } from "express";
import { AppError } from "../../domain/errors.js";
import type { PaymentsService } from "../../domain/payments/service.js";
import { languageOf, renderCheckout, renderNotFound } from "./page.js";

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

/** `GET /checkout/{paymentId}`: the hosted checkout page (D-81), and its script and styles. */
export function checkoutRoutes({ payments, sandbox }: { payments: Pick<PaymentsService, "checkout">; sandbox: boolean }): Router {
  const router = Router();
  router.use(
    "/checkout/assets",
    (_req, res, next) => {
      pageHeaders(res);
      next();
    },
    express.static(path.join(import.meta.dirname, "assets"), { index: false, maxAge: "1h", fallthrough: false }),
  );
  router.get("/checkout/:paymentId", async (req: Request, res: Response, next) => {
    const language = languageOf(req.query.lang, req.header("accept-language"));
    res.setHeader("Content-Language", language);
    pageHeaders(res);
    try {
      const payment = await payments.checkout(String(req.params.paymentId));
      res
        .status(200)
        .type("html")
        .send(renderCheckout({ ...payment, sandbox }, language));
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
