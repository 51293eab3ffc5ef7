// A `hub` command's failure, as the one sentence it prints.
export class CliError extends Error {}
