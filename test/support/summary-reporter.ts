// Prints one plain closing line, `N passed, N failed, N skipped`, for CI's "ran no test" check.
// A test that did not run because its setup failed (a `beforeAll` that threw, an import that broke) is
// counted as failed, not skipped: only a test marked `.skip`/`.todo` is skipped.
import type { Reporter, TestCase, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    const setupFailures: string[] = [];
    for (const module of testModules) {
      const tests = [...module.children.allTests()];
      // A module can fail outside its tests (a hook, an import) with no test to carry it: count it.
      if (module.state() === "failed" && tests.length === 0) {
        failed += 1;
        setupFailures.push(module.moduleId);
      }
      for (const test of tests) {
        const state = test.result().state;
        if (state === "passed") passed += 1;
        else if (state === "failed") failed += 1;
        else if (meantToSkip(test)) skipped += 1;
        else {
          failed += 1;
          setupFailures.push(test.fullName);
        }
      }
    }
    if (setupFailures.length > 0) {
      process.stdout.write(`\nnot run because their setup failed (counted as failed):\n`);
      for (const name of setupFailures) process.stdout.write(`  ${name}\n`);
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

function meantToSkip(test: TestCase): boolean {
  for (let task: TestCase | TestCase["parent"] | undefined = test; task && task.type !== "module"; task = task.parent) {
    if (task.options.mode === "skip" || task.options.mode === "todo") return true;
  }
  return false;
}
