// Tool files used by the tests, in the shape the tool-backend guide describes.
// They read the backend's address and key from the environment ($env.CLINIC_API, $env.CLINIC_API_KEY).
export const matchTherapists = `
description: Finds therapists who fit what the patient is going through and where they live.
when_to_use: The patient said what is going on and which area they live in.
parameters:
  type: object
  properties:
    reason: { type: string, description: "In the patient's words" }
    area: { type: string }
  required: [reason, area]
async:
  timeout: 10m
  cancel:
    method: DELETE
    path: /vatio/jobs/$job.id
request:
  method: POST
  base_url: "$env.CLINIC_API"
  path: /vatio/match
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
  body:
    reason:
    area:
    source: hub
respond:
  data:
    therapists: "$.data.therapists"
`;

/** The same search, taking messages while it runs (`async.message`): a body key with no value gets the text. */
export const matchWithMessages = `
description: Finds therapists who fit what the patient is going through and where they live.
parameters:
  type: object
  properties:
    reason: { type: string }
    area: { type: string }
  required: [reason, area]
async:
  timeout: 10m
  message:
    method: POST
    path: /vatio/jobs/$job.id/messages
    body:
      note:
      source: hub
request:
  method: POST
  base_url: "$env.CLINIC_API"
  path: /vatio/match
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
respond:
  data:
    therapists: "$.data.therapists"
`;

/** The same backend, with a timeout short enough to watch pass. */
export const quickTimeout = `
description: A job that is given two seconds.
parameters:
  type: object
  properties: { topic: { type: string } }
async:
  timeout: 2s
  cancel:
    method: DELETE
    path: /vatio/jobs/$job.id
request:
  base_url: "$env.CLINIC_API"
  path: /vatio/report
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
`;

export const checkStock = `
description: Checks stock of one product (answers at once).
parameters:
  type: object
  properties: { sku: { type: string } }
  required: [sku]
request:
  method: POST
  base_url: "$env.CLINIC_API"
  path: /vatio/stock
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
respond:
  data:
    available: "$.available"
`;
