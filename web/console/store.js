// What the browser keeps between visits (localStorage, under one prefix): the key, who signed in, filters.
const STORE = "cdh-console:";

export function load(name, fallback) {
  try {
    const raw = localStorage.getItem(STORE + name);
    return raw ? JSON.parse(raw) : fallback;
  } catch {
    return fallback;
  }
}

export function save(name, value) {
  try {
    if (value === undefined || value === null) localStorage.removeItem(STORE + name);
    else localStorage.setItem(STORE + name, JSON.stringify(value));
  } catch {
    // Storage disabled: the console still works until the page is closed.
  }
}
