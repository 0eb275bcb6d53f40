import { createRequire } from "node:module";
import path from "node:path";
import express, { Router } from "express";
import { z } from "zod";
import { processesModule } from "../../domain/processes/module.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";

/** `GET /v1/openapi.json`: the OpenAPI 3 document (bare JSON, as OpenAPI tools expect). */
export function openApiRoute(document: () => unknown): RouteSpec {
  const [route] = routesOf(processesModule, [
    defineRoute({
      method: "get",
      path: "/v1/openapi.json",
      operationId: "getOpenApiDocument",
      summary: "This OpenAPI 3 document",
      auth: "none",
      bare: true,
      response: z.record(z.string(), z.unknown()),
      handler: async () => ({ raw: document() }),
    }),
  ]);
  return route!;
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>TrustMint API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: "/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: true,
  tryItOutEnabled: true,
});
`;

/**
 * The swagger-ui-dist package's folder, found without loading the package: its main module
 * evaluates the 3.4 MB Swagger UI bundle, which only browsers run (D-87).
 */
const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/**
 * `GET /docs`: Swagger UI served from the swagger-ui-dist package (no CDN, works offline),
 * pointed at /v1/openapi.json by a small script file (no inline script).
 */
export function docsRoutes(): Router {
  const router = Router();
  router.get("/docs", (_req, res) => {
    res.type("html").send(PAGE);
  });
  router.get("/docs/init.js", (_req, res) => {
    res.type("application/javascript").send(INIT);
  });
  router.use("/docs/assets", express.static(SWAGGER_UI_DIR, { index: false, maxAge: "1h", fallthrough: true }));
  return router;
}
