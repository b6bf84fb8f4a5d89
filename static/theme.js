// EchoMQ console: the colour scheme chosen by hand (light, dark, or the system's), kept per browser.
// Loaded in <head> without defer, so the chosen scheme applies before the first paint (no flash).
(() => {
  "use strict";
  const KEY = "emq-theme";
  const read = () => { try { return localStorage.getItem(KEY) || "system"; } catch (e) { return "system"; } };
  const apply = (choice) => {
    if (choice === "light" || choice === "dark") document.documentElement.dataset.theme = choice;
    else delete document.documentElement.dataset.theme;
  };
  apply(read());
  document.addEventListener("DOMContentLoaded", () => {
    const select = document.getElementById("theme-switch");
    if (!select) return;
    select.value = read();
    select.addEventListener("change", () => {
      try { localStorage.setItem(KEY, select.value); } catch (e) { /* private mode: this page only */ }
      apply(select.value);
    });
  });
})();
