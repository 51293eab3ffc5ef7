import { defineJobProtocolTests } from "./support/job-protocol-scenarios.js";

defineJobProtocolTests("postgresql");
