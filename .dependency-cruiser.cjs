// Import rules checked by `npm run check` (`npm run check:imports` alone). See docs/architecture.md,
// "Imports point down". Type-only imports count: a type import is still an arrow.
/** Folders of the domain: they declare what they need and never reach up to transport or composition. */
const domain = "^src/(delivery|jobs|conversations|console|push|agent|tools)/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "Modules form a tree of layers: a cycle means two concepts that cannot be read apart.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "domain-not-up",
      comment:
        "The domain receives narrow dependencies (interfaces it declares); only the composition root, " +
        "transport (server/), workers and channel adapters know HubContext, Realtime and the hub.",
      severity: "error",
      from: { path: domain },
      to: { path: "^src/(server/|workers/|realtime\\.ts$|context\\.ts$|hub\\.ts$)" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/generated/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
