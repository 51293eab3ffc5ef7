import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "src/generated/", "dist/", "data/", "test-artifacts/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  { files: ["test/**", "bench/**"], rules: { "@typescript-eslint/no-explicit-any": "off" } },
  { files: ["scripts/**", "bin/**", "packages/**/*.js", "*.js"], languageOptions: { globals: globals.node } },
  { files: ["web/**/*.js"], languageOptions: { globals: { ...globals.browser, io: "readonly" } } },
  // A local that reuses an outer name hides it (the widget's Send button once hid its send()).
  { files: ["**/*.js", "**/*.mjs"], rules: { "no-shadow": "error" } },
  { files: ["**/*.ts"], rules: { "no-shadow": "off", "@typescript-eslint/no-shadow": "error" } },
);
