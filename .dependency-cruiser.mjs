// Import rules, checked by `npm run check` (alone: `npm run check:imports`); see docs/architecture.md,
// "Imports point down". Type-only imports count as well: a type import is an arrow like any other.

/** The domain: it declares the narrow dependencies it needs and never reaches up to transport or composition. */
const domain = "^src/(delivery|jobs|conversations|console|push|agent|tools|media|events|retention|team)/";

/**
 * What only the composition root (src/hub.ts), transport (src/server/), the workers (src/workers/) and the
 * channel adapters (src/channels/) may know: HubContext, the socket.io server and the hub itself.
 * The domain reaches the widget only through the change bus (typing and progress are changes too).
 */
const upward = "^src/(server/|workers/|realtime\\.ts$|context\\.ts$|hub\\.ts$)";

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-cycle",
      comment: "Modules import in one direction: a cycle means two concepts that cannot be read (or tested) apart.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "domain-imports-down",
      comment:
        "The domain (delivery, jobs, conversations, console, push, agent, tools, team) takes the dependencies it " +
        "declares; HubContext satisfies them structurally. It never imports transport, workers, realtime.ts, " +
        "context.ts or hub.ts.",
      severity: "error",
      from: { path: domain },
      to: { path: upward },
    },
    {
      name: "context-at-composition-level",
      comment:
        "HubContext is the composition level's: the root (hub.ts), transport (server/), workers and channel " +
        "adapters. Everything else declares the narrow dependencies it needs.",
      severity: "error",
      from: { pathNot: "^src/(hub\\.ts$|context\\.ts$|server/|workers/|channels/)" },
      to: { path: "^src/context\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Prisma's generated client is not ours to arrange.
    exclude: { path: "^src/generated/" },
    // Type-only imports (erased by tsc) are dependencies too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
