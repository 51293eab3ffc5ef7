// Rows a statement returns as JSON (json_agg, row_to_json), read back into the delivery core's rows.
import { messageFromJson, type MessageRow } from "../rows.js";

export type JsonRows = Record<string, unknown>[];

export const messages = (rows: unknown): MessageRow[] => ((rows ?? []) as JsonRows).map(messageFromJson);
