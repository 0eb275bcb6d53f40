// `npm run docs:packages`: the API reference (Markdown, docs/api/) of the hooks from the types and their comments.
import { OptionDefaults } from "typedoc";

/** @type {Partial<import("typedoc").TypeDocOptions & import("typedoc-plugin-markdown").PluginOptions>} */
export default {
  entryPoints: ["src/index.ts"],
  tsconfig: "tsconfig.build.json",
  plugin: ["typedoc-plugin-markdown"],
  out: "docs/api",
  readme: "none",
  excludePrivate: true,
  disableSources: true,
  hidePageHeader: true,
  // The generated OpenAPI types carry openapi-typescript's tags.
  blockTags: [...OptionDefaults.blockTags, "@description", "@enum"],
  treatWarningsAsErrors: true,
};
