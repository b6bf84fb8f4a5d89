// EchoMQ console: the job table holds still while the operator works in it.
//
// While the pointer is over the table, focus is inside it, a row is ticked or
// a confirmation is open, a live update does not insert, remove or reorder
// rows: it updates the cells of the rows shown (when, attempts), marks a row
// whose job has moved on (its buttons then refuse in words, sending nothing)
// and says what is waiting ("3 new jobs, 1 gone — show"), applied with one
// click or as soon as the operator moves away. Rows are keyed by job id and
// applied with idiomorph, so the rows that stay are the same DOM nodes.
(() => {
  "use strict";

  const main = () => document.getElementById("main");
  const section = () => document.getElementById("queue-jobs");
  const table = () => { const s = section(); return s ? s.querySelector("table.jobs") : null; };
  const rowsOf = (root) => (root ? Array.from(root.querySelectorAll("tbody tr[data-job]")) : []);

  // The page's own live socket: the server is told which rows the page shows,
  // so each push also says where the jobs of rows that left the page are now.
  let socket = null;
  const tell = (message) => { if (socket) socket.send(JSON.stringify(message), main()); };
  const tellShown = () => { if (section()) tell({ shown: rowsOf(section()).map((r) => r.dataset.job) }); };
  const filterBox = () => document.querySelector(".queue-filter input[name=filter]");
  const tellFilter = () => { const box = filterBox(); if (box) tell({ filter: box.value }); };
  document.addEventListener("htmx:wsOpen", (e) => {
    if (e.target !== main()) return;
    socket = e.detail.socketWrapper;
    tellShown();
    tellFilter();
  });
  document.addEventListener("htmx:wsClose", (e) => { if (e.target === main()) socket = null; });

  // --- holding still ---------------------------------------------------
  let waiting = null; // the newest pushed table, not shown yet

  const busy = () => {
    const t = table();
    if (!t) return false;
    return t.matches(":hover") || t.contains(document.activeElement) ||
      t.querySelector(".pick-job:checked") !== null ||
      document.querySelector("dialog.confirm-dialog[open]") !== null;
  };

  const keepTicks = {
    // A tick is the operator's, not the server's: a morph never clears it.
    beforeAttributeUpdated: (name, node) => !(name === "checked" && node.classList && node.classList.contains("pick-job")),
  };

  const apply = (incoming) => {
    const current = section();
    if (!current || !incoming) return;
    const hadFocus = current.contains(document.activeElement) ? document.activeElement : null;
    Idiomorph.morph(current, incoming, { morphStyle: "outerHTML", callbacks: keepTicks });
    waiting = null;
    const now = section();
    htmx.process(now);
    if (hadFocus && !hadFocus.isConnected) {
      const first = now.querySelector("tbody tr[data-job]");
      if (first) first.focus();
    }
    syncPickAll();
    tellShown();
  };

  const cells = (row) => Array.from(row.children).filter((td) => !td.matches(".pick, .actions"));

  const refreshCells = (row, fresh) => {
    const mine = cells(row), theirs = cells(fresh);
    mine.forEach((td, n) => {
      if (theirs[n] && td.innerHTML !== theirs[n].innerHTML) td.innerHTML = theirs[n].innerHTML;
    });
    row.classList.toggle("alarm", fresh.classList.contains("alarm"));
  };

  // The note takes the place of the row's "when" cell: a cell of fixed width
  // and one line, so no button moves when a row is marked.
  const note = (row, text, movedOn) => {
    const cell = row.querySelector("td.when") || row.lastElementChild;
    const span = document.createElement("span");
    span.className = "row-note";
    span.textContent = text;
    span.title = text;
    cell.replaceChildren(span);
    row.classList.toggle("moved-on", movedOn);
    row.classList.toggle("off-page", !movedOn);
    if (movedOn) {
      row.dataset.movedOn = text;
      for (const button of row.querySelectorAll("button")) button.setAttribute("aria-disabled", "true");
    }
  };

  const movedText = (state, attempts) => "now " + state + ", attempts " + (attempts || "0");

  const hold = (incoming) => {
    const current = section();
    waiting = incoming;
    const head = current.querySelector(".panel-head"), freshHead = incoming.querySelector(".panel-head");
    if (head && freshHead) Idiomorph.morph(head, freshHead, { morphStyle: "outerHTML" });
    syncPickAll();
    const fresh = new Map(rowsOf(incoming).map((r) => [r.dataset.job, r]));
    const elsewhere = new Map(Array.from(incoming.querySelectorAll("#jobs-elsewhere li"), (li) => [li.dataset.job, li.dataset]));
    const shown = new Set();
    let gone = 0, reordered = false;
    const order = rowsOf(incoming).map((r) => r.dataset.job);
    rowsOf(current).forEach((row, n) => {
      const id = row.dataset.job;
      shown.add(id);
      if (row.classList.contains("moved-on")) { if (!fresh.has(id)) gone++; return; }
      const now = fresh.get(id);
      if (now) {
        if (order[n] !== id) reordered = true;
        if (now.dataset.state === row.dataset.state && now.dataset.attempts === row.dataset.attempts) {
          row.classList.remove("off-page");
          refreshCells(row, now);
        }
        else note(row, movedText(now.dataset.state, now.dataset.attempts), true);
        return;
      }
      gone++;
      const where = elsewhere.get(id);
      if (!where) note(row, "no longer on this page", false);
      else if (where.exists !== "1") note(row, "now gone (deleted or purged)", true);
      else if (where.state !== row.dataset.state || where.attempts !== row.dataset.attempts) {
        note(row, movedText(where.state, where.attempts), true);
      } else note(row, "no longer on this page", false);
    });
    const added = order.filter((id) => !shown.has(id)).length;
    announce(added, gone, reordered);
  };

  const announce = (added, gone, reordered) =>
    announceIn(document.getElementById("jobs-waiting"), added, gone, reordered, ["new job", "new jobs"]);

  const announceIn = (box, added, gone, reordered, nouns) => {
    if (!box) return;
    const parts = [];
    if (added) parts.push(added + " " + (added === 1 ? nouns[0] : nouns[1]));
    if (gone) parts.push(gone + " gone");
    if (!parts.length && reordered) parts.push("the order has changed");
    if (!parts.length) { box.hidden = true; box.textContent = ""; return; }
    box.textContent = "Held while you work here: " + parts.join(", ") + " — ";
    const show = document.createElement("button");
    show.type = "button";
    show.className = "link-button";
    show.dataset.showWaiting = "";
    show.textContent = "show";
    box.append(show);
    box.hidden = false;
  };

  const receive = (incoming) => { if (busy()) hold(incoming); else apply(incoming); };
  // A page of more rows than one message holds comes in parts (data-parts on the first): the table is
  // put together first, then shown or held as one.
  let assembling = null;
  document.addEventListener("htmx:oobBeforeSwap", (e) => {
    if (!e.detail.target || e.detail.target.id !== "queue-jobs") return;
    const incoming = e.detail.fragment.firstElementChild;
    if (!incoming) return;
    e.detail.shouldSwap = false;
    const parts = Number(incoming.dataset.parts || 1);
    if (parts > 1) { assembling = { section: incoming, need: parts, got: 1 }; return; }
    assembling = null;
    receive(incoming);
  });
  document.addEventListener("htmx:oobBeforeSwap", (e) => {
    if (!e.detail.target || e.detail.target.id !== "queue-jobs-part") return;
    e.detail.shouldSwap = false;
    const part = e.detail.fragment.firstElementChild;
    if (!assembling || !part || Number(part.dataset.part) !== assembling.got + 1) { assembling = null; return; }
    const body = assembling.section.querySelector("tbody");
    for (const row of Array.from(part.querySelectorAll("tbody > tr"))) body.append(row);
    assembling.got += 1;
    if (assembling.got === assembling.need) {
      const whole = assembling.section;
      assembling = null;
      receive(whole);
    }
  });
  // The page-size control applies when chosen.
  document.addEventListener("change", (e) => {
    const t = e.target;
    if (t instanceof HTMLSelectElement && t.form && t.form.matches(".page-size")) t.form.requestSubmit();
  });

  const maybeApply = () => setTimeout(() => { if (waiting && !busy()) apply(waiting); }, 0);
  document.addEventListener("pointerout", (e) => {
    const t = table();
    if (t && t.contains(e.target) && !(e.relatedTarget && t.contains(e.relatedTarget))) maybeApply();
  });
  document.addEventListener("focusout", maybeApply);
  document.addEventListener("close", maybeApply, true);
  document.addEventListener("click", (e) => {
    if (e.target instanceof Element && e.target.closest("[data-show-waiting]") && waiting) apply(waiting);
  });

  // --- a press on a row that moved on is refused here, in words ---------
  const refuse = (text) => {
    const box = document.getElementById("action-results");
    if (!box) return;
    const p = document.createElement("p");
    p.className = "action-result refused";
    p.setAttribute("role", "status");
    p.textContent = text;
    box.prepend(p);
  };
  document.addEventListener("click", (e) => {
    const button = e.target instanceof Element ? e.target.closest("button[aria-disabled=true]") : null;
    if (!button) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    const holder = button.closest("[data-moved-on]");
    const form = button.closest("form");
    const id = form && form.querySelector("input[name=id]") ? form.querySelector("input[name=id]").value : "";
    const what = button.textContent.trim().toLowerCase();
    const drawn = holder && holder.matches("tr") ? "this row" : "this page";
    refuse(holder ? "refused, not sent: " + what + " on job " + id + ", which is " + holder.dataset.movedOn +
      " since " + drawn + " was drawn" : "refused, not sent: this button is out of date");
  }, true);

  // --- the job page: its buttons hold still under the pointer too ------
  let waitingCore = null;
  const coreBusy = () => {
    const actions = document.getElementById("job-actions");
    return !!actions && (actions.matches(":hover") || actions.contains(document.activeElement) ||
      document.querySelector("dialog.confirm-dialog[open]") !== null);
  };
  const skipActions = { beforeNodeMorphed: (node) => !(node instanceof Element && node.id === "job-actions") };
  const applyCore = (incoming) => {
    const current = document.getElementById("job-core");
    if (!current || !incoming) return;
    Idiomorph.morph(current, incoming, { morphStyle: "outerHTML" });
    waitingCore = null;
    htmx.process(document.getElementById("job-core"));
  };
  document.addEventListener("htmx:oobBeforeSwap", (e) => {
    if (!e.detail.target || e.detail.target.id !== "job-core") return;
    const incoming = e.detail.fragment.firstElementChild;
    if (!incoming) return;
    e.detail.shouldSwap = false;
    if (!coreBusy()) { applyCore(incoming); return; }
    const current = e.detail.target;
    waitingCore = incoming.cloneNode(true);
    const stamp = incoming.querySelector("#job-actions");
    if (stamp) stamp.replaceWith(document.getElementById("job-actions").cloneNode(true));
    Idiomorph.morph(current, incoming, { morphStyle: "outerHTML", callbacks: skipActions });
    const now = document.getElementById("job-core");
    const actions = document.getElementById("job-actions");
    const shown = actions.querySelector("form.job-actions");
    if (!shown) return;
    const state = shown.querySelector("input[name=state]").value, attempts = shown.querySelector("input[name=attempts]").value;
    // The buttons' form holds what a move compares against (~absent for a job without a state), as data-expected
    // does; data-state is the hash's field as shown ('' for none).
    if (now.dataset.expected !== state || now.dataset.attempts !== attempts) {
      const text = !now.dataset.expected ? "now gone"
        : movedText(now.dataset.state || "without a state", now.dataset.attempts);
      let span = actions.querySelector(".row-note");
      // After the buttons, not before them: no button moves.
      if (!span) { span = document.createElement("span"); span.className = "row-note"; actions.append(span); }
      span.textContent = text;
      actions.dataset.movedOn = text;
      for (const button of actions.querySelectorAll("button")) button.setAttribute("aria-disabled", "true");
    }
  });
  const maybeApplyCore = () => setTimeout(() => { if (waitingCore && !coreBusy()) applyCore(waitingCore); }, 0);
  document.addEventListener("pointerout", maybeApplyCore);
  document.addEventListener("focusout", maybeApplyCore);
  document.addEventListener("close", maybeApplyCore, true);

  // --- ticks: select all shown ------------------------------------------
  // The "Ticked:" buttons wait for a tick: a press with none would only be refused.
  const syncPickAll = () => {
    const boxes = Array.from(document.querySelectorAll("#queue-jobs .pick-job"));
    const ticked = boxes.filter((b) => b.checked).length;
    for (const button of document.querySelectorAll("#selection-form button")) {
      button.disabled = ticked === 0;
      button.title = ticked === 0 ? "tick a row first" : button.dataset.title || "";
    }
    const all = document.querySelector(".pick-all");
    if (!all) return;
    all.checked = boxes.length > 0 && ticked === boxes.length;
    all.indeterminate = ticked > 0 && ticked < boxes.length;
  };
  document.addEventListener("change", (e) => {
    const t = e.target;
    if (!(t instanceof HTMLInputElement)) return;
    if (t.classList.contains("pick-all")) {
      for (const box of document.querySelectorAll("#queue-jobs .pick-job")) box.checked = t.checked;
    }
    if (t.classList.contains("pick-all") || t.classList.contains("pick-job")) { syncPickAll(); maybeApply(); }
  });

  // --- keyboard: j / k between rows (a queue's jobs, the overview's queues), Enter opens one --------
  const keyRows = () => (section() ? rowsOf(section()) : queueRows(overviewTable()));
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
    const t = e.target;
    if (!(t instanceof HTMLTableRowElement) || !keyRows().includes(t)) return;
    const link = t.querySelector("td.id a, td.name a");
    if (link) { e.preventDefault(); link.click(); }
  });
  document.addEventListener("keydown", (e) => {
    if ((e.key !== "j" && e.key !== "k") || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement) return;
    if (document.querySelector("dialog[open]")) return;
    const rows = keyRows();
    if (!rows.length) return;
    const here = t instanceof Element ? t.closest("tbody tr") : null;
    const at = here ? rows.indexOf(here) : -1;
    const next = e.key === "j" ? Math.min(at + 1, rows.length - 1) : (at < 0 ? 0 : Math.max(at - 1, 0));
    e.preventDefault();
    rows[next].focus();
  });

  // --- the overview: its rows hold still under the pointer too ----------
  // A push may re-sort the page or bring other queues onto it; while the
  // pointer is over the table or focus is in it, the rows shown keep their
  // places (their numbers still update) and the page says what is waiting.
  let waitingOverview = null;
  const overviewTable = () => document.getElementById("overview-table");
  const queueRows = (root) => (root ? Array.from(root.querySelectorAll("#overview-rows tr[id]")) : []);
  const overviewBusy = () => {
    const box = overviewTable();
    const t = box ? box.querySelector("table") : null;
    return !!t && (t.matches(":hover") || t.contains(document.activeElement));
  };
  const applyOverview = (incoming) => {
    const current = overviewTable();
    if (!current || !incoming) return;
    // The answer to the operator's own filter is applied even while focus is in the table: a row that the
    // morph had to replace hands its focus to the row of the same queue, so j, k and Enter go on from it.
    const focused = current.contains(document.activeElement) ? document.activeElement : null;
    const focusedRow = focused ? focused.closest("tr[id]") : null;
    Idiomorph.morph(current, incoming, { morphStyle: "outerHTML" });
    waitingOverview = null;
    htmx.process(overviewTable());
    // A row the morph replaced, or moved (a moved element loses focus too), hands focus to the row of that queue.
    if (focused && focusedRow && focused === focusedRow && document.activeElement !== focused) {
      const again = document.getElementById(focusedRow.id);
      if (again && again.closest("#overview-table")) again.focus();
    }
  };
  const holdOverview = (incoming) => {
    waitingOverview = incoming;
    const fresh = new Map(queueRows(incoming).map((r) => [r.id, r]));
    const mine = queueRows(overviewTable());
    const order = queueRows(incoming).map((r) => r.id);
    const shown = new Set();
    let gone = 0, reordered = false;
    mine.forEach((row, n) => {
      shown.add(row.id);
      const now = fresh.get(row.id);
      if (!now) { gone++; row.classList.add("off-page"); return; }
      if (order[n] !== row.id) reordered = true;
      row.classList.remove("off-page");
      refreshCells(row, now);
    });
    const added = order.filter((id) => !shown.has(id)).length;
    announceIn(document.getElementById("overview-waiting"), added, gone, reordered, ["new queue", "new queues"]);
  };
  const receiveOverview = (incoming) => {
    // The answer to the operator's own filter is shown at once; what the server pushes by itself waits.
    if (overviewBusy() && !incoming.dataset.asked) holdOverview(incoming);
    else applyOverview(incoming);
  };
  // As the queue page's: a page of more queues than one message holds comes in parts, put together first.
  let assemblingOverview = null;
  document.addEventListener("htmx:oobBeforeSwap", (e) => {
    if (!e.detail.target || e.detail.target.id !== "overview-table") return;
    const incoming = e.detail.fragment.firstElementChild;
    if (!incoming) return;
    e.detail.shouldSwap = false;
    const parts = Number(incoming.dataset.parts || 1);
    if (parts > 1) { assemblingOverview = { table: incoming, need: parts, got: 1 }; return; }
    assemblingOverview = null;
    receiveOverview(incoming);
  });
  document.addEventListener("htmx:oobBeforeSwap", (e) => {
    if (!e.detail.target || e.detail.target.id !== "overview-table-part") return;
    e.detail.shouldSwap = false;
    const part = e.detail.fragment.firstElementChild;
    const got = assemblingOverview;
    if (!got || !part || Number(part.dataset.part) !== got.got + 1) { assemblingOverview = null; return; }
    const body = got.table.querySelector("#overview-rows");
    for (const row of Array.from(part.querySelectorAll("tbody > tr"))) body.append(row);
    got.got += 1;
    if (got.got === got.need) {
      assemblingOverview = null;
      delete got.table.dataset.parts;
      receiveOverview(got.table);
    }
  });
  const maybeApplyOverview = () => setTimeout(() => { if (waitingOverview && !overviewBusy()) applyOverview(waitingOverview); }, 0);
  document.addEventListener("pointerout", maybeApplyOverview);
  document.addEventListener("focusout", maybeApplyOverview);
  document.addEventListener("click", (e) => {
    if (e.target instanceof Element && e.target.closest("[data-show-waiting]") && waitingOverview) applyOverview(waitingOverview);
  });

  // --- the overview's filter: in the URL, applied by the server ---------
  let typing = 0;
  const filterNow = () => {
    const box = filterBox();
    if (!box) return;
    const url = new URL(location.href);
    if (box.value.trim()) url.searchParams.set("filter", box.value.trim());
    else url.searchParams.delete("filter");
    // Another filter starts from the first row, as the server does.
    url.searchParams.delete("offset");
    history.replaceState(history.state, "", url);
    if (socket) tellFilter();
    else location.assign(url);
  };
  document.addEventListener("input", (e) => {
    if (e.target !== filterBox()) return;
    clearTimeout(typing);
    typing = setTimeout(filterNow, 200);
  });
  document.addEventListener("submit", (e) => {
    if (!(e.target instanceof Element) || !e.target.matches(".queue-filter") || !socket) return;
    e.preventDefault();
    clearTimeout(typing);
    filterNow();
  });

  // --- the summaries: a push morphs them in place, so a focused tab or link keeps focus --------
  // So do the queue page's workers line (its Workers link), a bulk run's progress (its Cancel button) and an
  // overview row whose numbers changed (pushed alone, focused by j / k): each push re-sends them whole, and
  // swapped in as new elements they would drop the focus an operator gave them.
  const morphedInPlace = (target) => target.id === "queue-summary" || target.id === "overview-summary" ||
    target.id === "queue-workers" || target.matches(".run-progress, #overview-rows > tr[id]");
  document.addEventListener("htmx:oobBeforeSwap", (e) => {
    const target = e.detail.target;
    if (!target || !morphedInPlace(target)) return;
    const incoming = e.detail.fragment.firstElementChild;
    if (!incoming) return;
    e.detail.shouldSwap = false;
    const focused = target.contains(document.activeElement) ? document.activeElement : null;
    const href = focused && focused.getAttribute("href");
    Idiomorph.morph(target, incoming, { morphStyle: "outerHTML" });
    const now = document.getElementById(target.id);
    htmx.process(now);
    if (!focused || focused.isConnected) return;
    // Replaced all the same: the element itself (a row) by its id, a link by its href.
    const again = focused === target ? now
      : href && Array.from(now.querySelectorAll("a[href]")).find((a) => a.getAttribute("href") === href);
    if (again) again.focus();
  });

  // --- after a press: the table lets go -------------------------------
  // A row's press answers in the results box: focus goes to that answer, so once the pointer leaves the
  // table shows what the move did. A ticked run that started clears its ticks: they were acted on.
  document.addEventListener("htmx:afterRequest", (e) => {
    const form = e.target instanceof Element ? e.target.closest("form") : null;
    const ok = e.detail.xhr && e.detail.xhr.status >= 200 && e.detail.xhr.status < 300;
    if (!form || !ok) return;
    if (form.matches("#queue-jobs form.job-actions")) {
      const answer = document.querySelector("#action-results .action-result");
      if (answer) { answer.tabIndex = -1; answer.focus(); }
    } else if (form.id === "selection-form" && !document.querySelector("dialog.confirm-dialog[open]")) {
      for (const box of document.querySelectorAll("#queue-jobs .pick-job:checked")) box.checked = false;
    } else return;
    syncPickAll();
    maybeApply();
  });

  document.addEventListener("DOMContentLoaded", syncPickAll);
})();
