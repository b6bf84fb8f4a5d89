// EchoMQ console: ticks countdowns against the Redis server clock, and shows
// the state of the live connection. htmx (with its ws extension) does the rest.
(() => {
  "use strict";
  // serverNow() = Date.now() + offset. The offset is measured from the server
  // time each page and each live update carries, so a skewed laptop clock
  // still shows the right time left on a lease.
  let offset = 0;
  const measure = (serverMs) => { if (serverMs > 0) offset = serverMs - Date.now(); };
  const serverNow = () => Date.now() + offset;

  const duration = (ms) => {
    const s = Math.abs(ms) / 1000;
    if (s < 10) return s.toFixed(1) + " s";
    if (s < 60) return Math.floor(s) + " s";
    let m = Math.floor(s / 60);
    const sec = Math.floor(s % 60);
    if (m < 60) return m + "m " + String(sec).padStart(2, "0") + "s";
    let h = Math.floor(m / 60); m %= 60;
    if (h < 24) return h + "h " + String(m).padStart(2, "0") + "m";
    return Math.floor(h / 24) + "d " + (h % 24) + "h";
  };

  const tick = () => {
    const now = serverNow();
    for (const el of document.querySelectorAll("[data-deadline]")) {
      const left = Number(el.dataset.deadline) - now;
      el.textContent = left >= 0 ? duration(left) + " left" : "lapsed " + duration(left) + " ago";
      el.classList.toggle("lapsed", left < 0);
    }
    for (const el of document.querySelectorAll("[data-due]")) {
      const left = Number(el.dataset.due) - now;
      // Under a "Due" label the word is there already (data-due-word=""): "Due 3 s ago", not "Due due 3 s ago".
      const word = el.dataset.dueWord ?? "due ";
      el.textContent = left > 0 ? "in " + duration(left) : word + duration(left) + " ago";
    }
    for (const el of document.querySelectorAll("[data-since]")) {
      el.textContent = duration(now - Number(el.dataset.since)) + " ago";
    }
  };

  const clock = () => {
    const el = document.getElementById("server-clock");
    if (el) measure(Number(el.dataset.now));
  };

  const liveStatus = (text) => {
    const el = document.getElementById("live-status");
    if (!el) return;
    if (text) el.textContent = text;
    el.hidden = !text;
  };

  // Reconnect within about 2 s at worst (the ws extension's default backs off to a minute).
  if (window.htmx) htmx.config.wsReconnectDelay = (retries) => Math.min(250 * 2 ** retries, 2000) * (0.5 + Math.random() / 2);

  document.addEventListener("DOMContentLoaded", () => {
    measure(Number(document.body.dataset.serverNow));
    tick();
    setInterval(tick, 200);
  });
  // The queue bar offers what applies now, as the live summary says: Pause or Resume, and no queue-wide
  // button for a count that is 0.
  const syncQueueBar = () => {
    const summary = document.getElementById("queue-summary");
    const bar = document.querySelector(".queue-bar");
    if (!summary || !bar) return;
    const paused = summary.dataset.paused === "1";
    for (const el of bar.querySelectorAll("[data-when]")) el.hidden = (el.dataset.when === "paused") !== paused;
    for (const button of bar.querySelectorAll("button[data-needs]")) {
      button.disabled = Number(summary.dataset[button.dataset.needs] || 0) === 0;
    }
  };
  document.addEventListener("htmx:wsAfterMessage", () => { clock(); tick(); syncQueueBar(); });
  document.addEventListener("htmx:afterSwap", () => { clock(); tick(); });
  // The banner speaks of the page's own live socket (on <main>) only: a bulk
  // run's socket closing when the run ends is not a disconnect.
  const isPageSocket = (e) => e.target === document.getElementById("main");
  document.addEventListener("htmx:wsOpen", (e) => { if (isPageSocket(e)) liveStatus(""); });
  document.addEventListener("htmx:wsClose", (e) => {
    if (!isPageSocket(e)) return;
    const code = e.detail && e.detail.event ? e.detail.event.code : 0;
    if (code === 4401) liveStatus("Your session has ended: reload the page to log in again.");
    else if (code === 4403) liveStatus("Your account no longer has a console role: ask an admin for one.");
    else if (code === 4429) liveStatus("Too many live pages are open for you on this console: close some, then reload this one.");
    else if (code >= 4000) liveStatus("This page cannot be followed live (" + code + "): reload it.");
    else liveStatus("Live updates are disconnected from the console; reconnecting…");
  });
  // An action refused (403), bad (400) or not done (503) answers with a sentence
  // to show, not an error to drop: a form or section marked data-show-refusals
  // swaps it in, into its own target or the element the attribute names.
  document.addEventListener("htmx:beforeSwap", (e) => {
    const status = e.detail.xhr.status;
    if (status < 400 || status === 401) return;
    const holder = e.target instanceof Element ? e.target.closest("[data-show-refusals]") : null;
    if (!holder) return;
    e.detail.shouldSwap = true;
    e.detail.isError = false;
    const into = holder.dataset.showRefusals;
    if (into) e.detail.target = document.getElementById(into);
  });
  // A button marked data-dismiss closes the confirmation (or note) it sits in;
  // without JavaScript it is a link back to the page the operator came from.
  document.addEventListener("click", (e) => {
    const button = e.target instanceof Element ? e.target.closest("[data-dismiss]") : null;
    if (!button) return;
    e.preventDefault();
    const box = button.closest("dialog") || button.closest("form, .action-result");
    if (box instanceof HTMLDialogElement) box.close();
    else if (box) box.remove();
  });

  // The server answers a destructive or large action with its confirmation
  // step, a <dialog>: shown modal (Escape closes it), one at a time, and gone
  // once closed or once its form has had its answer.
  const openConfirmation = (dialog) => {
    for (const other of document.querySelectorAll("dialog.confirm-dialog")) {
      if (other !== dialog && other.open) other.close();
    }
    dialog.addEventListener("close", () => dialog.remove(), { once: true });
    if (!dialog.open) dialog.showModal();
  };
  document.addEventListener("htmx:load", (e) => {
    const root = e.target;
    if (!(root instanceof Element)) return;
    if (root.matches("dialog.confirm-dialog")) openConfirmation(root);
    else for (const dialog of root.querySelectorAll("dialog.confirm-dialog")) openConfirmation(dialog);
  });
  document.addEventListener("htmx:afterRequest", (e) => {
    const dialog = e.target instanceof Element ? e.target.closest("dialog.confirm-dialog") : null;
    if (dialog && e.detail.xhr && e.detail.xhr.status > 0) dialog.close();
  });
  // A bulk run that ends on the failures page or over a search's results: the page catches up with what it
  // did (the groups and their counts, the matches and their states), once the pointer is off the list that
  // changes, so nothing moves under it. The finished run's box stays where it was.
  const caughtUp = new Set();
  const whenPointerLeaves = (el, then) => {
    if (el && el.matches(":hover")) el.addEventListener("mouseleave", then, { once: true });
    else then();
  };
  // The search's matches are a new search's, drawn afresh: a match link with focus could only lose it, so they
  // also wait until focus has left them.
  const whenLeft = (el, then) => {
    if (el && el.matches(":hover")) el.addEventListener("mouseleave", () => whenLeft(el, then), { once: true });
    else if (el && el.contains(document.activeElement)) {
      el.addEventListener("focusout", () => setTimeout(() => whenLeft(el, then), 0), { once: true });
    } else then();
  };
  // The groups are morphed in place, not swapped: a group still there (matched by its id) keeps the focus an
  // operator gave its link, button or slice form, and an opened slice or an option chosen stays so.
  const keepChoices = {
    beforeAttributeUpdated: (name, node) => !((name === "open" && node instanceof HTMLDetailsElement) ||
      (name === "selected" && node instanceof HTMLOptionElement)),
  };
  const refreshGroups = async () => {
    const answer = await fetch(location.pathname + location.search, { credentials: "same-origin" });
    if (!answer.ok) return;
    const fresh = new DOMParser().parseFromString(await answer.text(), "text/html").getElementById("failure-groups");
    const current = document.getElementById("failure-groups");
    if (!fresh || !current) return;
    Idiomorph.morph(current, fresh, { morphStyle: "outerHTML", callbacks: keepChoices });
    htmx.process(document.getElementById("failure-groups"));
  };
  const keptRuns = [];
  const catchUp = () => {
    for (const progress of document.querySelectorAll("#failure-runs .run-progress, .search-results .action-runs .run-progress")) {
      if (progress.classList.contains("running") || caughtUp.has(progress.id)) continue;
      caughtUp.add(progress.id);
      const groups = document.getElementById("failure-groups");
      if (progress.closest("#failure-runs") && groups) {
        whenPointerLeaves(groups, refreshGroups);
        continue;
      }
      const form = document.querySelector("form.search-form");
      const results = document.getElementById("search-results");
      if (!form || !results) continue;
      whenLeft(results.querySelector(".search-matches"), () => {
        for (const box of results.querySelectorAll(".action-runs > .run")) {
          box.removeAttribute("ws-connect");
          box.removeAttribute("hx-ext");
          keptRuns.push(box);
        }
        htmx.trigger(form, "submit");
      });
    }
  };
  document.addEventListener("htmx:wsAfterMessage", catchUp);
  // A search has ended once its last message (the act buttons, data-final) has come. The extension opens a
  // socket again when its close looks abnormal (a proxy's, a restart's), and a search socket that opens starts
  // its search over: its first message would empty the matches being read, and Redis would be searched again.
  // So an ended search's socket that opens again is closed at once, and anything it sends is dropped.
  // Ended: the act buttons of its last message are on the page (a message that brings them is not dropped).
  const endedSearch = (e) => e.target instanceof Element && e.target.matches(".search-results") &&
    e.target.querySelector(".search-act[data-final]") !== null;
  document.addEventListener("htmx:wsBeforeMessage", (e) => { if (endedSearch(e)) e.preventDefault(); });
  document.addEventListener("htmx:wsOpen", (e) => {
    if (endedSearch(e) && e.detail.event) e.detail.event.target.close(1000, "the search has ended");
  });
  document.addEventListener("htmx:afterSettle", () => {
    const runs = document.querySelector("#search-results .action-runs");
    if (!runs || !keptRuns.length) return;
    for (const box of keptRuns.splice(0)) runs.append(box);
  });
  // Typing in the clone form's payload means the edited text is wanted: its choice follows.
  document.addEventListener("input", (e) => {
    if (!(e.target instanceof Element) || e.target.id !== "clone-payload") return;
    const edited = document.getElementById("clone-edited");
    if (edited instanceof HTMLInputElement) edited.checked = true;
  });
  const typing = (t) => t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement;
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const find = document.querySelector(".find input");
    if (e.key === "Escape" && t === find) { find.blur(); return; }
    if (typing(t) || document.querySelector("dialog[open]")) return;
    if (e.key === "/" && find) { e.preventDefault(); find.focus(); }
    if (e.key === "?") {
      const keys = document.getElementById("keys-help");
      if (keys instanceof HTMLDialogElement) { e.preventDefault(); keys.showModal(); }
    }
  });
})();
