// The LLM agent's rules that need no model: what the safeguard counts as made up (a table), and how
// AGENT_MODEL is configured (one agent per hub, a key unless a local server is named, readable instructions).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { claimsIn, inventedClaims, sourcesOf, withoutClaims } from "../src/agent/llm/safeguard.js";
import { ConfigError, loadConfig } from "../src/config.js";

const RESULT = JSON.stringify({
  therapists: [{ name: "Ana Rojas", phone: "+56 9 8765 4321", fee: 45000, site: "https://clinic.example/ana" }],
  contact: "citas@clinic.example",
});

describe("the safeguard on what a model invents", () => {
  const sources = sourcesOf([
    "Instructions: our line is 600 123 4567.",
    RESULT,
    "I live in Ñuñoa, my number is 912345678",
  ]);
  const cases: { reply: string; invented: string[] }[] = [
    { reply: "Ana's page: https://clinic.example/ana.", invented: [] },
    { reply: "Book at https://clinic.example/book", invented: ["https://clinic.example/book"] },
    { reply: "Write to citas@clinic.example or ana@gmail.com", invented: ["ana@gmail.com"] },
    { reply: "Call her at +56 9 8765 4321 or (600) 123-4567", invented: [] },
    { reply: "Call +56 2 2222 3333", invented: ["+56 2 2222 3333"] },
    { reply: "I can call you back at 912 345 678", invented: [] },
    { reply: "A session costs $45.000", invented: [] },
    { reply: "A session costs $45.000, the first one USD 30", invented: ["USD 30"] },
    { reply: "See you on 2026-12-03 at 10:30, in Ñuñoa", invented: [] },
    { reply: "She has 12 years of experience", invented: [] },
  ];
  for (const { reply, invented } of cases) {
    it(`"${reply}" → ${invented.length ? invented.join(", ") : "nothing made up"}`, () => {
      expect(inventedClaims(reply, sources).map((claim) => claim.text)).toEqual(invented);
    });
  }

  it("removes what stays made up and tidies where it stood", () => {
    const reply = "Book at https://book.example/x or call +56 2 2222 3333.";
    const claims = claimsIn(reply);
    expect(claims.map((claim) => claim.kind)).toEqual(["link", "phone"]);
    expect(withoutClaims(reply, claims)).toBe("Book at or call.");
    expect(withoutClaims("Here: [book](https://book.example/x)", claimsIn("https://book.example/x"))).toBe(
      "Here: book",
    );
  });
});

describe("AGENT_MODEL", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "hub-llm-config-"));
  const load = (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir, ...env });
  const problems = (env: Record<string, string>) => {
    try {
      load(env);
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };

  it("chooses a provider and model with one setting, a local server needing no key", () => {
    expect(load({ AGENT_MODEL: "openai:gpt-4o-mini", OPENAI_API_KEY: "sk-x" }).llm).toMatchObject({
      provider: "openai",
      model: "gpt-4o-mini",
      apiKey: "sk-x",
      baseUrl: undefined,
      maxSteps: 8,
    });
    expect(load({ AGENT_MODEL: "openai:llama3.2", OPENAI_BASE_URL: "http://127.0.0.1:11434/v1/" }).llm).toMatchObject({
      model: "llama3.2",
      apiKey: undefined,
      baseUrl: "http://127.0.0.1:11434/v1",
    });
    expect(load({ AGENT_MODEL: "anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY: "k" }).llm?.provider).toBe(
      "anthropic",
    );
    expect(load({}).llm).toBeUndefined();
  });

  it("refuses what cannot work, one line each", () => {
    expect(problems({ AGENT_MODEL: "openai:m", OPENAI_API_KEY: "k", AGENT_URL: "http://127.0.0.1:9/turn" })).toEqual([
      "AGENT_MODEL: set either AGENT_URL (your own agent runtime) or AGENT_MODEL (the hub's LLM agent), not both",
    ]);
    expect(problems({ AGENT_MODEL: "gpt-4o" })[0]).toMatch(/^AGENT_MODEL: must be openai:<model>/);
    expect(problems({ AGENT_MODEL: "anthropic:claude" })).toEqual([
      "ANTHROPIC_API_KEY: must be set for anthropic:claude (or set ANTHROPIC_BASE_URL)",
    ]);
    expect(problems({ AGENT_MODEL: "openai:m", OPENAI_API_KEY: "k", AGENT_INSTRUCTIONS: "/nonexistent/x.md" })).toEqual(
      ["AGENT_INSTRUCTIONS: cannot read /nonexistent/x.md (ENOENT)"],
    );
    expect(problems({ AGENT_MODEL: "openai:m", OPENAI_API_KEY: "k", AGENT_MAX_STEPS: "0" })[0]).toMatch(
      /^AGENT_MAX_STEPS/,
    );
  });

  it("reads the business's instructions from AGENT_INSTRUCTIONS", () => {
    const file = path.join(dataDir, "instructions.md");
    writeFileSync(file, "You are the clinic's assistant.\n");
    expect(load({ AGENT_MODEL: "openai:m", OPENAI_API_KEY: "k", AGENT_INSTRUCTIONS: file }).llm?.instructions).toBe(
      "You are the clinic's assistant.",
    );
  });
});
