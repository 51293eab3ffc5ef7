// `hub test [files…] [--repeat N] [--json report.json]`: runs conversation tests (docs/testing-your-agent.md)
// against the hub's current agent and tool files; exits 1 when an expectation fails, for CI.
import { readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { configuredToolsDir } from "../config.js";
import { ToolFileError } from "../tools/load-tools.js";
import { runConversationTests, type TestOutcome, type TestReport } from "../testing/run-conversation-tests.js";
import { readTestFile, TestFileError, type TestFile } from "../testing/test-file.js";
import { terminalText } from "./terminal-text.js";

const DEFAULT_DIR = "tests";

export async function hubTest(
  args: string[],
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { repeat: { type: "string", default: "1" }, json: { type: "string" } },
    });
  } catch (error) {
    err(`hub: ${(error as Error).message}`);
    return 2;
  }
  const repeat = Number(parsed.values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 100) {
    err("hub: --repeat takes a whole number from 1 to 100");
    return 2;
  }
  let paths = parsed.positionals;
  if (paths.length === 0) {
    try {
      paths = (await readdir(DEFAULT_DIR))
        .filter((file) => /\.ya?ml$/.test(file))
        .sort()
        .map((file) => path.join(DEFAULT_DIR, file));
    } catch {
      paths = [];
    }
    if (paths.length === 0) {
      err(`hub: no test file given and none in ${DEFAULT_DIR}/ (*.yml): nothing was tested`);
      return 1;
    }
  }
  const files: TestFile[] = [];
  for (const file of paths) {
    try {
      files.push(await readTestFile(file));
    } catch (error) {
      if (!(error instanceof TestFileError)) throw error;
      err(terminalText(error.message));
      return 1;
    }
  }
  let report: TestReport;
  try {
    report = await runConversationTests(files, {
      env: process.env,
      toolsDir: configuredToolsDir(),
      repeat,
      onTest: (outcome) => printOutcome(outcome, repeat, out),
    });
  } catch (error) {
    // The tool files as the hub would refuse them: said as `hub tools check` says them.
    if (!(error instanceof ToolFileError)) throw error;
    err(terminalText(`hub: ${error.message}`));
    return 1;
  }
  printSummary(report, repeat, out);
  if (parsed.values.json) await writeFile(parsed.values.json, `${JSON.stringify(report, null, 2)}\n`);
  return report.passed ? 0 : 1;
}

function printOutcome(outcome: TestOutcome, repeat: number, out: (line: string) => void): void {
  const run = repeat > 1 ? ` (run ${outcome.run})` : "";
  out(`${outcome.passed ? "PASS" : "FAIL"} ${outcome.file}: ${terminalText(outcome.name)}${run}`);
  for (const each of outcome.outcomes) {
    out(
      `  ${each.passed ? "ok  " : "FAIL"} step ${each.step} (${terminalText(each.step_label)}): ${terminalText(each.expectation)}`,
    );
    if (each.diff) for (const line of terminalText(each.diff).split("\n")) out(`         ${line}`);
  }
  if (outcome.error) out(`  FAIL ${terminalText(outcome.error)}`);
}

function printSummary(report: TestReport, repeat: number, out: (line: string) => void): void {
  if (repeat > 1)
    for (const rate of report.pass_rates)
      out(
        `pass rate ${rate.passed}/${rate.runs} (${Math.round((100 * rate.passed) / rate.runs)}%) ${rate.file}: ${terminalText(rate.name)}`,
      );
  const failed = report.tests.filter((test) => !test.passed).length;
  out(`agent: ${report.agent}`);
  if (report.tokens.in + report.tokens.out > 0) out(`model tokens: ${report.tokens.in} in, ${report.tokens.out} out`);
  out(`${report.tests.length - failed} passed, ${failed} failed`);
}
