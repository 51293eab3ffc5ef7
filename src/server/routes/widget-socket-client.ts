// The socket.io client as the widget loads it: socket.io's own browser bundle, wrapped so that it defines no
// global (`window.io` stays the host page's, if it has one) and ignores a host page's AMD loader (which would
// otherwise take the module and leave the widget without it). The wrapper hands the client to the widget in
// an event on its own script element, which only the widget listens to.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Request, Response } from "express";

export const WIDGET_IO_EVENT = "cdh:socket.io";

let wrapped: string | undefined;

function build(): string {
  const require = createRequire(import.meta.url);
  const dir = path.dirname(require.resolve("socket.io/package.json"));
  const bundle = readFileSync(path.join(dir, "client-dist", "socket.io.min.js"), "utf8")
    // The source map sits beside socket.io's own copy, not beside this one.
    .replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  // With a local `module` and `exports`, the bundle's UMD header takes its CommonJS branch.
  return `(function () {
var module = { exports: {} }, exports = module.exports, script = document.currentScript;
${bundle}
if (script) script.dispatchEvent(new CustomEvent(${JSON.stringify(WIDGET_IO_EVENT)}, { detail: module.exports }));
})();
`;
}

export function serveWidgetSocketClient(_req: Request, res: Response): void {
  wrapped ??= build();
  res.set({ "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300" });
  res.send(wrapped);
}
