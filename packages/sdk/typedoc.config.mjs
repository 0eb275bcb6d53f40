// `npm run docs:packages`: the API reference (Markdown, docs/api/) from the types and their comments.
import { OptionDefaults } from "typedoc";

/** @type {Partial<import("typedoc").TypeDocOptions & import("typedoc-plugin-markdown").PluginOptions>} */
export default {
  entryPoints: ["src/index.ts", "src/payments.ts"],
  tsconfig: "tsconfig.build.json",
  plugin: ["typedoc-plugin-markdown"],
  out: "docs/api",
  readme: "none",
  excludePrivate: true,
  disableSources: true,
  hidePageHeader: true,
  // The generated OpenAPI types carry openapi-typescript's tags.
  blockTags: [...OptionDefaults.blockTags, "@description", "@enum"],
  // The raw OpenAPI types are their own entry (`@trustmint/sdk/openapi`), documented by the API's /v1/docs.
  intentionallyNotExported: ["operations", "components"],
  treatWarningsAsErrors: true,
};
