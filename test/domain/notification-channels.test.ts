import { expect } from "chai";
import { createEmailSender, EmailSendError } from "../../domain/notifications/channels/email.js";
import { createExpoPush, PushRequestError } from "../../domain/notifications/channels/push.js";
import { answerError, answerTickets, startPushReceiver } from "../helpers/push-receiver.js";
import { startSmtpServer } from "../helpers/smtp.js";

// The two outside channels against real local servers: an HTTP receiver answering in Expo's push
// format, and a real SMTP server (smtp-server) that the e-mails are read back from.

describe("notification channels: Expo push and SMTP", () => {
  it("pushes through Expo's API and tells a gone device (DeviceNotRegistered) from other refusals", async () => {
    const expo = await startPushReceiver((messages, res) =>
      answerTickets(
        res,
        messages.map(({ to }) => {
          if (to.includes("gone")) {
            return {
              status: "error",
              message: `"${to}" is not a registered push notification recipient`,
              details: { error: "DeviceNotRegistered" },
            };
          }
          if (to.includes("big")) return { status: "error", message: "too big", details: { error: "MessageTooBig" } };
          return { status: "ok", id: `ticket-${to}` };
        }),
      ),
    );
    try {
      const push = createExpoPush({ url: expo.url, accessToken: "expo-secret" });
      const message = (to: string) => ({ to, title: "Loan funded", body: "20.00 USDC", data: { loanId: "l-1" } });
      const tickets = await push.send([
        message("ExponentPushToken[a]"),
        message("ExponentPushToken[gone]"),
        message("ExponentPushToken[big]"),
      ]);
      expect(tickets).to.deep.equal([
        { ok: true, id: "ticket-ExponentPushToken[a]" },
        { ok: false, error: "DeviceNotRegistered", deviceGone: true },
        { ok: false, error: "MessageTooBig", deviceGone: false },
      ]);
      expect(expo.received).to.have.length(1);
      expect(expo.received[0]!.headers.authorization).to.equal("Bearer expo-secret");
      expect(expo.received[0]!.messages[0]).to.deep.include({ to: "ExponentPushToken[a]", title: "Loan funded" });
    } finally {
      await expo.close();
    }
  });

  it("takes a 429 with Retry-After as retryable and a 400 as not", async () => {
    let status = 429;
    const expo = await startPushReceiver((_messages, res) => answerError(res, status, { "retry-after": "30" }));
    try {
      const push = createExpoPush({ url: expo.url });
      const send = () => push.send([{ to: "ExponentPushToken[a]", title: "t", body: "b", data: {} }]);
      const throttled = await send().catch((error: unknown) => error);
      expect(throttled).to.be.instanceOf(PushRequestError);
      expect(throttled).to.include({ retryable: true, retryAfterSeconds: 30 });
      status = 400;
      const refused = await send().catch((error: unknown) => error);
      expect(refused).to.include({ retryable: false });
    } finally {
      await expo.close();
    }
  });

  it("sends e-mail to a real SMTP server, and logs it instead when there is none", async () => {
    const smtp = await startSmtpServer();
    const { mails } = smtp;
    try {
      const email = createEmailSender({ smtpUrl: smtp.url, from: "TrustMint <no-reply@trustmint.test>" });
      expect(email.sends).to.equal(true);
      await email.send({ to: "alice@example.com", subject: "Your loan is funded", text: "20.00 USDC reached your wallet." });
      email.close();
      expect(mails).to.have.length(1);
      expect(mails[0]).to.deep.include({ from: "no-reply@trustmint.test", to: ["alice@example.com"] });
      expect(mails[0]!.text).to.include("Subject: Your loan is funded").and.include("20.00 USDC reached your wallet.");

      const logged: unknown[] = [];
      const offline = createEmailSender({
        smtpUrl: undefined,
        from: "x <x@y.z>",
        logger: { info: (fields: unknown) => logged.push(fields) },
      });
      expect(offline.sends).to.equal(false);
      await offline.send({ to: "bob@example.com", subject: "Hello", text: "body" });
      expect(logged).to.deep.equal([{ to: "bob@example.com", subject: "Hello" }]);
    } finally {
      await smtp.close();
    }
  });

  it("reports an SMTP server that cannot be reached as retryable", async () => {
    const email = createEmailSender({ smtpUrl: "smtp://127.0.0.1:9", from: "x <x@y.z>" });
    const error = await email.send({ to: "a@b.c", subject: "s", text: "t" }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(EmailSendError);
    expect(error).to.include({ retryable: true });
  });
});
