// swagger-ui-dist ships no types; the API uses one function of it.
declare module "swagger-ui-dist" {
  /** The folder holding swagger-ui.css, swagger-ui-bundle.js and the other assets. */
  export function getAbsoluteFSPath(): string;
}
