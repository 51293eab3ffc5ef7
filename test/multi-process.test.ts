// Several hub processes on one PostgreSQL and one Redis behave as one hub: a widget on one process gets
// a result posted to another, and two worker processes never run turns of one conversation at once.
import { defineMultiProcessTests } from "./support/multi-process-scenarios.js";

defineMultiProcessTests("postgresql");
