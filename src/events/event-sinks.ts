// The database's list of endpoints ("HubEventSink"), which the event triggers read: set by the hub at start
// from its settings, so the triggers write events exactly while some endpoint is configured (and only the
// types some endpoint wants). With none configured the table is emptied and the triggers write nothing.
import type { SqlQuery } from "../db/sql.js";
import type { EventEndpoint } from "./event-endpoints.js";

/** Makes the sink rows the configured endpoints, in one statement (the last process started decides). */
export async function setEventSinks(sql: SqlQuery, endpoints: readonly EventEndpoint[]): Promise<void> {
  const sinks = endpoints.map((endpoint) => ({ endpoint: endpoint.key, events: endpoint.events ?? null }));
  await sql.query(
    `WITH wanted AS (
       SELECT x.endpoint, CASE WHEN x.events IS NULL THEN NULL
                               ELSE ARRAY(SELECT jsonb_array_elements_text(x.events)) END AS events
       FROM jsonb_to_recordset($1::jsonb) AS x(endpoint text, events jsonb)),
     gone AS (DELETE FROM "HubEventSink" WHERE endpoint NOT IN (SELECT endpoint FROM wanted))
     INSERT INTO "HubEventSink" (endpoint, events, "updatedAt")
     SELECT endpoint, events, (now() AT TIME ZONE 'UTC') FROM wanted
     ON CONFLICT (endpoint) DO UPDATE SET events = excluded.events, "updatedAt" = excluded."updatedAt"
       WHERE "HubEventSink".events IS DISTINCT FROM excluded.events`,
    [JSON.stringify(sinks)],
  );
}
