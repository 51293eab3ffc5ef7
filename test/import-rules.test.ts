// The import rules `npm run check` applies (.dependency-cruiser.mjs), run on a small tree of their own: they
// refuse the domain importing HubContext (a type-only import too), anything but the composition level
// importing it, and a cycle made of type imports; transport and channel adapters may import the context. The repository's own tree is checked by `npm run check:imports`.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "./support/hub-process.js";

const files: Record<string, string> = {
  "tsconfig.json": JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext" } }),
  "src/context.ts": "export interface HubContext { now: () => Date }\n",
  "src/delivery/takes-context.ts":
    'import type { HubContext } from "../context.js";\nexport const at = (ctx: HubContext) => ctx.now();\n',
  "src/jobs/first.ts": 'import type { Second } from "./second.js";\nexport interface First { next?: Second }\n',
  "src/jobs/second.ts": 'import type { First } from "./first.js";\nexport interface Second { back?: First }\n',
  "src/server/route.ts":
    'import type { HubContext } from "../context.js";\nexport const at = (ctx: HubContext) => ctx.now();\n',
  "src/tools/alone.ts": "export const alone = true;\n",
  "src/cli/reads-context.ts": 'import type { HubContext } from "../context.js";\nexport type Read = HubContext;\n',
  "src/channels/widget/adapter.ts":
    'import type { HubContext } from "../../context.js";\nexport type Adapter = HubContext;\n',
};

function cruise(cwd: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    [
      path.join(root, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs"),
      "src",
      "--config",
      path.join(root, ".dependency-cruiser.mjs"),
      "--output-type",
      "err",
    ],
    { cwd, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, out })));
}

describe("import rules", () => {
  it("refuse the domain importing the context and a cycle of type imports; transport may import the context", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "import-rules-"));
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    const { code, out } = await cruise(dir);
    expect(code).not.toBe(0);
    expect(out).toContain("domain-imports-down: src/delivery/takes-context.ts → src/context.ts");
    expect(out).toMatch(/no-cycle: src\/jobs\/(first|second)\.ts/);
    expect(out).not.toContain("src/server/route.ts");
    expect(out).toContain("context-at-composition-level: src/cli/reads-context.ts → src/context.ts");
    expect(out).not.toContain("src/tools/alone.ts");
    expect(out).not.toContain("src/channels/widget/adapter.ts");
  });
});
