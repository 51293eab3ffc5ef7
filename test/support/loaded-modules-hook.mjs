// The loader hook of loaded-modules.mjs: runs on the loader's thread, records each resolved URL.
import { appendFileSync } from "node:fs";

let file;

export function initialize(data) {
  file = data?.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (file) appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
