// `npm run docs:packages`: the API reference of the hooks (Markdown, docs/api/), with the SDK's settings.
import sdk from "../sdk/typedoc.config.mjs";

const { intentionallyNotExported: _sdkOnly, ...shared } = sdk;

/** @type {Partial<import("typedoc").TypeDocOptions & import("typedoc-plugin-markdown").PluginOptions>} */
export default { ...shared, entryPoints: ["src/index.ts"] };
