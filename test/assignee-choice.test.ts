// Who gets a team's next conversation, as a table: round robin's rotation and least loaded's count, both never
// past a member's capacity, and a re-assignment never giving it back to the member it is taken from.
import { describe, expect, it } from "vitest";
import { chooseAssignee, type AssigneeQuestion, type Candidate } from "../src/team/assignee-choice.js";

const at = (minute: number) => new Date(Date.UTC(2026, 11, 3, 9, minute));
const member = (id: string, assigned: number, capacity = 3, lastAssignedAt: Date | null = null): Candidate => ({
  id,
  assigned,
  capacity,
  lastAssignedAt,
});

const rows: [string, AssigneeQuestion, string | undefined][] = [
  [
    "round robin: nobody given one yet → the first by id",
    { routing: "round_robin", candidates: [member("bo", 0), member("ana", 0)], lastAssignedId: null },
    "ana",
  ],
  [
    "round robin: the next after the last one given",
    { routing: "round_robin", candidates: [member("ana", 1), member("bo", 0)], lastAssignedId: "ana" },
    "bo",
  ],
  [
    "round robin: wraps around after the last id",
    { routing: "round_robin", candidates: [member("ana", 1), member("bo", 1)], lastAssignedId: "bo" },
    "ana",
  ],
  [
    "round robin: the last one given left the team → the next id after theirs",
    { routing: "round_robin", candidates: [member("ana", 0), member("cy", 0)], lastAssignedId: "bo" },
    "cy",
  ],
  [
    "round robin: a member at capacity is passed over",
    { routing: "round_robin", candidates: [member("ana", 0), member("bo", 3), member("cy", 0)], lastAssignedId: "ana" },
    "cy",
  ],
  [
    "round robin: load does not matter, only the rotation",
    { routing: "round_robin", candidates: [member("ana", 0), member("bo", 2)], lastAssignedId: "ana" },
    "bo",
  ],
  [
    "round robin: everyone at capacity → nobody",
    { routing: "round_robin", candidates: [member("ana", 3), member("bo", 1, 1)], lastAssignedId: null },
    undefined,
  ],
  ["round robin: no candidates → nobody", { routing: "round_robin", candidates: [], lastAssignedId: "ana" }, undefined],
  [
    "round robin: a re-assignment skips the member it is taken from",
    { routing: "round_robin", candidates: [member("ana", 1), member("bo", 1)], lastAssignedId: "ana", exclude: "bo" },
    "ana",
  ],
  [
    "round robin: only the excluded member can take it → nobody",
    { routing: "round_robin", candidates: [member("ana", 3), member("bo", 1)], lastAssignedId: null, exclude: "bo" },
    undefined,
  ],
  [
    "round robin: ids in code-unit order (upper case first)",
    { routing: "round_robin", candidates: [member("ana", 0), member("Zoe", 0)], lastAssignedId: null },
    "Zoe",
  ],
  [
    "least loaded: fewest assigned",
    { routing: "least_loaded", candidates: [member("ana", 2), member("bo", 1), member("cy", 2)], lastAssignedId: null },
    "bo",
  ],
  [
    "least loaded: a tie goes to the longest since last given one",
    {
      routing: "least_loaded",
      candidates: [member("ana", 1, 3, at(30)), member("bo", 1, 3, at(10))],
      lastAssignedId: null,
    },
    "bo",
  ],
  [
    "least loaded: never given one counts as longest",
    {
      routing: "least_loaded",
      candidates: [member("ana", 0, 3, at(1)), member("bo", 0, 3, null)],
      lastAssignedId: null,
    },
    "bo",
  ],
  [
    "least loaded: a full tie goes to the first id",
    { routing: "least_loaded", candidates: [member("cy", 0), member("bo", 0)], lastAssignedId: "bo" },
    "bo",
  ],
  [
    "least loaded: the least loaded at capacity (capacity 0) is passed over",
    { routing: "least_loaded", candidates: [member("ana", 0, 0), member("bo", 2)], lastAssignedId: null },
    "bo",
  ],
  [
    "least loaded: the excluded member, however idle, is not chosen",
    { routing: "least_loaded", candidates: [member("ana", 0), member("bo", 2)], lastAssignedId: null, exclude: "ana" },
    "bo",
  ],
  [
    "least loaded: all at capacity → nobody",
    { routing: "least_loaded", candidates: [member("ana", 2, 2), member("bo", 5, 5)], lastAssignedId: null },
    undefined,
  ],
];

describe("choosing the assignee", () => {
  it.each(rows)("%s", (_name, question, expected) => {
    expect(chooseAssignee(question)).toBe(expected);
  });

  it("round robin over a queue: applying each choice rotates across the members with room", () => {
    const candidates = [member("ana", 0, 1), member("bo", 0, 5), member("cy", 0, 5)];
    let lastAssignedId: string | null = null;
    const given: string[] = [];
    for (let i = 0; i < 6; i++) {
      const chosen = chooseAssignee({ routing: "round_robin", candidates, lastAssignedId });
      if (!chosen) break;
      given.push(chosen);
      candidates.find((candidate) => candidate.id === chosen)!.assigned += 1;
      lastAssignedId = chosen;
    }
    expect(given).toEqual(["ana", "bo", "cy", "bo", "cy", "bo"]);
  });
});
