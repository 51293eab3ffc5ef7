// Files of the data folder that hold secrets (secrets.json, the chat state) are readable by their owner only.
// Written to a temporary file created 0600 and renamed over the old one: the mode holds even when the old file
// was readable by others (writeFileSync's mode applies only to a file it creates), and a crash mid-write
// never leaves half a file.
import { randomBytes } from "node:crypto";
import { chmodSync, renameSync, rmSync, writeFileSync } from "node:fs";

export function writeSecretFile(file: string, text: string): void {
  const temporary = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    writeFileSync(temporary, text, { mode: 0o600, flag: "wx" });
    // The umask can only take bits away; this makes sure of the rest.
    chmodSync(temporary, 0o600);
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
