// One action at a time (take over, send, cancel…): buttons are disabled meanwhile, a failure is shown in the
// status line, and the list and the open timeline are read again afterwards, whatever happened.
import { showError } from "./api.js";
import { listRefresh, timelineRefresh } from "./refresh.js";
import { state } from "./state.js";

const busyListeners = [];
/** Called whenever an action starts or ends (controls enable and disable themselves). */
export function onBusyChange(listener) {
  busyListeners.push(listener);
}

function setBusy(busy) {
  state.busy = busy;
  for (const listener of busyListeners) listener();
}

export async function act(label, run) {
  if (state.busy) return;
  setBusy(true);
  try {
    await run();
  } catch (error) {
    showError(label, error);
  } finally {
    setBusy(false);
    timelineRefresh.schedule(0);
    listRefresh.schedule(0);
  }
}

/** The open conversation's id, ready for a URL. */
export const currentId = () => (state.selectedId ? encodeURIComponent(state.selectedId) : "");
