import { describe, expect, it } from "vitest";
import { renderTemplate } from "../src/delivery/template.js";

describe("WhatsApp templates", () => {
  it("fill $result.message, $tool.name and $contact.name, and turn plain strings into text parameters", () => {
    const rendered = renderTemplate(
      {
        name: "results_ready",
        language: "es",
        components: [
          { type: "body", parameters: ["$contact.name", { type: "text", text: "$tool.name: $result.message" }] },
        ],
      },
      { "result.message": "2 found", "tool.name": "match_therapists", "contact.name": "Ana" },
    );
    expect(rendered).toEqual({
      name: "results_ready",
      language: "es",
      components: [
        {
          type: "body",
          parameters: [
            { type: "text", text: "Ana" },
            { type: "text", text: "match_therapists: 2 found" },
          ],
        },
      ],
    });
  });
  it("leave a template without components as it is", () => {
    expect(
      renderTemplate(
        { name: "hub_default", language: "en" },
        { "result.message": "", "tool.name": "", "contact.name": "" },
      ),
    ).toEqual({
      name: "hub_default",
      language: "en",
    });
  });
});
