// `node --import ./test/support/loaded-modules.mjs …`: every module URL the process resolves through the
// ES-module loader is appended to the file named by LOADED_MODULES_FILE (what a process loaded, for tests
// that must prove something was not).
import { register } from "node:module";
import process from "node:process";

register("./loaded-modules-hook.mjs", import.meta.url, { data: { file: process.env.LOADED_MODULES_FILE } });
