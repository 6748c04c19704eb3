// Run report: opening calls, search and filters. Inlined into the page at build time and allowed
// by the page's Content-Security-Policy through its hash only.
(() => {
  const calls = Array.from(document.querySelectorAll("details.call"));
  const search = document.getElementById("search");
  const role = document.getElementById("filter-role");
  const tool = document.getElementById("filter-tool");
  const failed = document.getElementById("filter-failed");
  const count = document.getElementById("shown");
  const ENTITIES = { "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&amp;": "&" };

  // The calls' bodies: a gzip-compressed JSON array of markup (every string from the run already
  // escaped; see html.ts), inflated once with the browser's own DecompressionStream.
  const bodies = inflate(document.getElementById("call-bodies"));

  async function inflate(source) {
    if (!source) return [];
    const binary = atob(source.value);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  async function materialize(call) {
    if (call.querySelector(":scope > .body")) return;
    const markup = (await bodies)[Number(call.dataset.body)];
    if (markup === undefined || call.querySelector(":scope > .body")) return;
    const body = document.createElement("div");
    body.className = "body";
    body.innerHTML = markup;
    call.append(body);
  }

  document.addEventListener(
    "toggle",
    (event) => {
      const target = event.target;
      if (target instanceof HTMLDetailsElement && target.open && target.classList.contains("call"))
        materialize(target);
    },
    true,
  );

  function plain(markup) {
    return markup.replace(/<[^>]*>/g, " ").replace(/&(?:lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e]);
  }

  // What a reader sees of each call, lower-cased; built on the first search only.
  let texts = null;
  async function searchTexts() {
    if (!texts) {
      const all = await bodies;
      texts = calls.map((c) =>
        `${c.querySelector(":scope > summary").textContent} ${plain(all[Number(c.dataset.body)] ?? "")}`.toLowerCase(),
      );
    }
    return texts;
  }

  // Check rows (every iteration's check output): the search marks those that hold the text.
  const checkRows = Array.from(document.querySelectorAll("tr[data-check]"));
  const checkTexts = checkRows.map((row) => row.textContent.toLowerCase());

  let generation = 0;
  async function apply() {
    const mine = ++generation;
    const query = search.value.trim().toLowerCase();
    const haystack = query ? await searchTexts() : null;
    if (mine !== generation) return; // a newer filter is on its way
    let shown = 0;
    calls.forEach((call, i) => {
      const visible =
        (!role.value || call.dataset.role === role.value) &&
        (!tool.value || (call.dataset.tools || "").split(" ").includes(tool.value)) &&
        (!failed.checked || call.dataset.failed === "1") &&
        (!haystack || haystack[i].includes(query));
      if (call.hidden === visible) call.hidden = !visible; // untouched rows cost no layout
      if (visible) shown++;
    });
    let matched = 0;
    checkRows.forEach((row, i) => {
      const hit = query !== "" && checkTexts[i].includes(query);
      row.classList.toggle("match", hit);
      if (!hit) return;
      matched++;
      for (const fold of row.querySelectorAll("details")) fold.open = true;
    });
    count.textContent = `${shown} of ${calls.length} calls shown${query ? `; ${matched} check output(s) match` : ""}`;
    document.body.dataset.filtered = String(performance.now());
  }

  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 50);
  });
  for (const control of [role, tool, failed]) control.addEventListener("change", apply);

  // A link to a call (or into one) opens it and every section around it.
  function openTarget() {
    for (let el = document.getElementById(location.hash.slice(1)); el; el = el.parentElement)
      if (el.tagName === "DETAILS") el.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  if (location.hash) openTarget();
  bodies.catch((error) => {
    count.textContent = `call details could not be unpacked: ${error.message}`;
  });
  apply();
  // Build the search text while the reader looks at the header, so the first search is quick.
  bodies.then(() => setTimeout(searchTexts, 0));
})();
