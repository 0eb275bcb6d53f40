// The webhook egress (domain/webhooks/egress.ts) in production mode: every refused address is
// refused without a connection to it, judged on what the connection would use (a name through a
// resolver this test controls), and a redirect is never followed. A local TCP listener counts
// the connections that reach it; outside production the same listener is reached, so the
// refusals are the guard's and not a network failure.
import type dns from "node:dns";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { addressRefusal, createWebhookEgress, type Lookup, urlRefusal } from "../../domain/webhooks/egress.js";

describe("webhook egress: SSRF guard", function () {
  this.timeout(30_000);
  let server: http.Server;
  let port: number;
  let connections = 0;
  let hang = false;
  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === "/redirect") return res.writeHead(307, { location: `http://127.0.0.1:${port}/target` }).end();
      if (hang) return; // never answers
      req.resume();
      req.on("end", () => res.writeHead(204).end());
    });
    server.on("connection", () => {
      connections += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Names this test resolves: a private address for one, loopback for another, a public one mixed with a private one for a third. */
  const lookup: Lookup = (hostname, _options, callback) => {
    const answers: Record<string, dns.LookupAddress[]> = {
      "internal.example": [{ address: "10.1.2.3", family: 4 }],
      "loop.example": [{ address: "127.0.0.1", family: 4 }],
      "mixed.example": [
        { address: "93.184.216.34", family: 4 },
        { address: "192.168.0.10", family: 4 },
      ],
      "mapped.example": [{ address: "::ffff:127.0.0.1", family: 6 }],
      "compatible.example": [{ address: "::7f00:1", family: 6 }],
      "nat64-metadata.example": [{ address: "64:ff9b::a9fe:a9fe", family: 6 }],
    };
    const found = answers[hostname];
    if (!found) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), []);
    callback(null, found);
  };

  it("judges addresses by range: loopback, private, link-local, CGNAT, multicast, IPv6 and IPv4-mapped forms", () => {
    const refused = {
      "127.0.0.1": "loopback",
      "::1": "loopback",
      "::ffff:127.0.0.1": "loopback",
      "10.0.0.1": "private",
      "172.16.5.4": "private",
      "192.168.1.1": "private",
      "169.254.169.254": "linkLocal",
      "100.64.0.1": "carrierGradeNat",
      "224.0.0.1": "multicast",
      "0.0.0.0": "unspecified",
      "fd00:ec2::254": "uniqueLocal",
      "fe80::1": "linkLocal",
      "::ffff:10.0.0.1": "private",
    };
    for (const [address, range] of Object.entries(refused))
      expect(addressRefusal(address, { allowLoopback: false }), address).to.equal(range);
    for (const address of ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"]) {
      expect(addressRefusal(address, { allowLoopback: false }), address).to.equal(null);
    }
    expect(addressRefusal("127.0.0.1", { allowLoopback: true })).to.equal(null);
    expect(addressRefusal("10.0.0.1", { allowLoopback: true })).to.equal("private");
  });

  it("in production, refuses every such URL and name without connecting, at the attempt", async () => {
    const egress = createWebhookEgress({ production: true, lookup });
    try {
      const urls = [
        `https://127.0.0.1:${port}/`,
        `https://[::1]:${port}/`,
        `https://[::ffff:127.0.0.1]:${port}/`,
        "https://10.0.0.1/",
        "https://172.16.0.1/",
        "https://192.168.0.1/",
        "https://169.254.169.254/latest/meta-data/",
        "https://100.64.0.1/",
        `https://localhost:${port}/`,
        `http://127.0.0.1:${port}/`,
        `https://internal.example:${port}/`,
        `https://loop.example:${port}/`,
        `https://mixed.example:${port}/`,
        `https://mapped.example:${port}/`,
      ];
      for (const url of urls) {
        const result = await egress.post(url, "{}", {});
        expect(result.ok, url).to.equal(false);
        expect(result.statusCode, url).to.equal(0);
        expect(result.error, url).to.match(/^refused: /);
      }
      expect(connections).to.equal(0);
      // A name's addresses are judged at the connection (the resolver's answer), not only at registration.
      expect(urlRefusal(`https://loop.example:${port}/`, { production: true })).to.equal(null);
      expect((await egress.post(`https://loop.example:${port}/`, "{}", {})).error).to.equal(
        "refused: loop.example resolves to 127.0.0.1, a loopback address",
      );
    } finally {
      await egress.close();
    }
  });

  it("judges an IPv6 address that embeds IPv4 by what it embeds: refused at registration and at the connection when one is not public", async () => {
    // Teredo's client address is stored with every bit inverted: ~127.0.0.1 is 80ff:fffe, ~8.8.8.8 is f7f7:f7f7.
    const refused: Record<string, RegExp> = {
      "::127.0.0.1": /^loopback \(127\.0\.0\.1 in IPv4-compatible form\)$/,
      "::7f00:1": /^loopback \(127\.0\.0\.1 in IPv4-compatible form\)$/,
      "::a00:1": /^private /,
      "::ffff:10.0.0.1": /^private$/,
      "::ffff:0:127.0.0.1": /^loopback .*IPv4-translated/,
      "64:ff9b::169.254.169.254": /^linkLocal .*NAT64/,
      "64:ff9b::a00:1": /^private .*NAT64/,
      "64:ff9b:1::a00:1": /^rfc6052$/,
      "2002:7f00:1::": /^loopback .*6to4/,
      "2002:c0a8:101::1": /^private .*6to4/,
      "2001:0:4136:e378:8000:63bf:80ff:fffe": /^loopback \(127\.0\.0\.1 in Teredo form\)$/,
      "2001:0:a00:1:8000:63bf:f7f7:f7f7": /^private \(10\.0\.0\.1 in Teredo form\)$/,
    };
    for (const [address, reason] of Object.entries(refused)) {
      expect(addressRefusal(address, { allowLoopback: false }), address).to.match(reason);
      expect(urlRefusal(`https://[${address}]:${port}/`, { production: true }), address).to.match(/^must not point at a /);
    }
    // The same forms around public addresses are the public addresses: allowed.
    for (const address of ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:f7f7:f7f7"]) {
      expect(addressRefusal(address, { allowLoopback: false }), address).to.equal(null);
      expect(urlRefusal(`https://[${address}]/`, { production: true }), address).to.equal(null);
    }
    // At the connection: the literal the URL parser normalised (::127.0.0.1 becomes ::7f00:1) and names that resolve to such forms.
    const egress = createWebhookEgress({ production: true, lookup });
    try {
      const before = connections;
      for (const url of [
        `https://[::127.0.0.1]:${port}/`,
        `https://[64:ff9b::7f00:1]:${port}/`,
        `https://compatible.example:${port}/`,
        `https://nat64-metadata.example:${port}/`,
      ]) {
        const result = await egress.post(url, "{}", {});
        expect(result.error, url).to.match(/^refused: /);
      }
      expect((await egress.post(`https://compatible.example:${port}/`, "{}", {})).error).to.equal(
        "refused: compatible.example resolves to ::7f00:1, a loopback (127.0.0.1 in IPv4-compatible form) address",
      );
      expect(connections).to.equal(before);
    } finally {
      await egress.close();
    }
  });

  it("outside production, reaches loopback over http (the control), never follows a redirect, and cuts a receiver that hangs at 5 s", async () => {
    const egress = createWebhookEgress({ production: false, lookup });
    try {
      const ok = await egress.post(`http://127.0.0.1:${port}/hook`, "{}", {});
      expect(ok).to.include({ ok: true, statusCode: 204 });
      expect(connections).to.be.above(0);
      const redirected = await egress.post(`http://127.0.0.1:${port}/redirect`, "{}", {});
      expect(redirected).to.include({ ok: false, statusCode: 307, error: "redirect not followed (HTTP 307)" });
      // Private addresses stay refused outside production.
      expect((await egress.post(`http://internal.example:${port}/`, "{}", {})).error).to.match(/^refused: /);
      hang = true;
      const started = performance.now();
      const hung = await egress.post(`http://127.0.0.1:${port}/slow`, "{}", {});
      const waited = performance.now() - started;
      expect(hung).to.include({ ok: false, statusCode: 0, error: "no answer within 5 s" });
      expect(waited).to.be.within(4_900, 10_000);
    } finally {
      hang = false;
      await egress.close();
    }
  });
});
