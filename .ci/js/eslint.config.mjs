// ESLint for the web UI's own scripts. Run from the repository root by .ci/run:
//   .ci/js/node_modules/.bin/eslint --config .ci/js/eslint.config.mjs --max-warnings 0 app/webui/static
// The pages load as classic scripts in index.html's order, sharing three globals (api.js
// defines calmon, charts.js charts, ui.js ui) and the vendored uPlot; vendor/ is not ours.
import js from "@eslint/js";
import globals from "globals";

const STATIC = "app/webui/static";
const SHARED = { calmon: "readonly", charts: "readonly", ui: "readonly", uPlot: "readonly" };

export default [
  { ignores: [`${STATIC}/vendor/**`] },
  {
    files: [`${STATIC}/*.js`],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, ...SHARED },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      ...js.configs.recommended.rules,
      // A global defined by one script and read by the next is declared `/* exported */`.
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "all" }],
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-implicit-globals": "error",
      "no-shadow": "error",
      "prefer-const": "error",
      "no-var": "error",
      strict: ["error", "global"],
      // Bugs the recommended set lets through.
      "array-callback-return": "error",
      "no-promise-executor-return": "error",
      "no-self-compare": "error",
      "no-template-curly-in-string": "error",
      "no-unmodified-loop-condition": "error",
      "no-unused-expressions": "error",
      "no-use-before-define": ["error", { functions: false }],
      // Properties: it flags every write to document.body.dataset after an await (the pages' ready
      // markers), races or not; the two real ones it pointed at are fixed (app.js, analyses.js).
      "require-atomic-updates": ["error", { allowProperties: true }],
      "consistent-return": "error",
      "default-param-last": "error",
      "no-loop-func": "error",
    },
  },
  // Each defining script declares its own global: it is not a readonly one there.
  { files: [`${STATIC}/api.js`], languageOptions: { globals: { calmon: "off" } } },
  { files: [`${STATIC}/charts.js`], languageOptions: { globals: { charts: "off" } } },
  { files: [`${STATIC}/ui.js`], languageOptions: { globals: { ui: "off" } } },
];
