// Prints one plain closing line, `N passed, N failed, N skipped`, for CI's "ran no test" check.
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of testModules) {
      // A module can fail outside its tests (a hook, an import): count it, or the line would hide it.
      if (
        module.state() === "failed" &&
        [...module.children.allTests()].every((test) => test.result().state !== "failed")
      ) {
        failed += 1;
      }
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed += 1;
        else if (state === "failed") failed += 1;
        else skipped += 1;
      }
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
