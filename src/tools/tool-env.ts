// `$env.NAME` in tool files: which names a file uses, where, and whether each has a value. A name with no
// value would be sent as an empty string (a base URL of "", a key of "Bearer "), so it is refused at load.
import { placeholdersIn, stringsIn } from "./placeholders.js";

/**
 * Names the hub gives a value itself when the environment sets none: its own public URL (where the demo
 * tool's backend lives) and the key that backend asks for.
 */
export const HUB_PROVIDED_ENV: readonly string[] = ["HUB_URL", "DEMO_BACKEND_KEY"];

/** Whether a tool file may use `$env.NAME`: set, not empty, in `env`, or provided by the hub. */
export function toolEnvHas(env: Readonly<Record<string, string | undefined>>): (name: string) => boolean {
  return (name) => (env[name] ?? "") !== "" || HUB_PROVIDED_ENV.includes(name);
}

/** Every `$env.NAME` in a value (strings, lists, objects), with the key it is under ("request.headers.X"). */
export function envReferences(value: unknown, key: string): { key: string; name: string }[] {
  return stringsIn(value, key).flatMap((each) =>
    placeholdersIn(each.text)
      .filter((placeholder) => placeholder.namespace === "env" && placeholder.name !== undefined)
      .map((placeholder) => ({ key: each.key, name: placeholder.name! })),
  );
}
