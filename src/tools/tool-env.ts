// `$env.NAME` in tool files: which names a file uses, where, and whether each has a value. A name with no
// value would be sent as an empty string (a base URL of "", a key of "Bearer "), so it is refused at load.

/**
 * Names the hub gives a value itself when the environment sets none: its own public URL (where the demo
 * tool's backend lives) and the key that backend asks for.
 */
export const HUB_PROVIDED_ENV: readonly string[] = ["HUB_URL", "DEMO_BACKEND_KEY"];

const ENV_REFERENCE = /\$env\.([A-Za-z_][A-Za-z0-9_]*)/g;

/** Whether a tool file may use `$env.NAME`: set, not empty, in `env`, or provided by the hub. */
export function toolEnvHas(env: Readonly<Record<string, string | undefined>>): (name: string) => boolean {
  return (name) => (env[name] ?? "") !== "" || HUB_PROVIDED_ENV.includes(name);
}

/** Every `$env.NAME` in a value (strings, lists, objects), with the key it is under ("request.headers.X"). */
export function envReferences(value: unknown, key: string): { key: string; name: string }[] {
  if (typeof value === "string") return [...value.matchAll(ENV_REFERENCE)].map((match) => ({ key, name: match[1]! }));
  if (Array.isArray(value)) return value.flatMap((item, index) => envReferences(item, `${key}.${index}`));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([child, item]) => envReferences(item, `${key}.${child}`));
  return [];
}
