// A real SMTP server (aiosmtpd from Debian's python3-aiosmtpd, run by smtp_capture.py) standing in for the
// hub's SMTP relay: it requires AUTH with the given user and password, keeps each e-mail it accepts, can be
// told to answer DATA with an error, and can be stopped and started again on the same port.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { simpleParser, type ParsedMail } from "mailparser";
import { freePort } from "./services.js";

const SCRIPT = path.join(import.meta.dirname, "smtp_capture.py");
export const PYTHON = "/usr/bin/python3";

export class SmtpCapture {
  readonly dir = mkdtempSync(path.join(tmpdir(), "smtp-capture-"));
  port = 0;
  private child: ChildProcess | undefined;

  constructor(
    readonly user: string,
    readonly password: string,
  ) {}

  async start(): Promise<this> {
    if (!this.port) this.port = await freePort();
    const child = spawn(PYTHON, [SCRIPT, String(this.port), this.dir, this.user, this.password], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("ready") && resolve());
      child.once("exit", (code) => reject(new Error(`smtp_capture.py exited (${code}): ${stderr}`)));
    });
    return this;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    this.child = undefined;
  }

  /** Every DATA is answered with this line until `accept()`. */
  answerWith(line: string): void {
    writeFileSync(path.join(this.dir, "answer"), `${line}\n`);
  }

  accept(): void {
    rmSync(path.join(this.dir, "answer"), { force: true });
  }

  /** The e-mails accepted so far, parsed, with their envelope. */
  async mails(): Promise<(ParsedMail & { envelopeTo: string[] })[]> {
    const file = path.join(this.dir, "mail.jsonl");
    if (!existsSync(file)) return [];
    const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
    return Promise.all(
      lines.map(async (line) => {
        const record = JSON.parse(line) as { to: string[]; data: string };
        return Object.assign(await simpleParser(record.data), { envelopeTo: record.to });
      }),
    );
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
