// ESLint for the web UI's own scripts. Run from the repository root by .ci/run:
//   .ci/js/node_modules/.bin/eslint --config .ci/js/eslint.config.mjs --max-warnings 0 app/webui/static
// The pages are ES modules (index.html loads app.js, which imports the rest); the vendored uPlot
// is the one global, loaded before them as a classic script; vendor/ is not ours.
import js from "@eslint/js";
import globals from "globals";

const STATIC = "app/webui/static";

export default [
  { ignores: [`${STATIC}/vendor/**`] },
  {
    files: [`${STATIC}/*.js`],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser, uPlot: "readonly" },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      ...js.configs.recommended.rules,
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "all" }],
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-shadow": "error",
      "prefer-const": "error",
      "no-var": "error",
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
];
