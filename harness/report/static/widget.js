(function () {
  "use strict";
  // Everything this script knows comes from the JSON below: the grid, one model per registered
  // implementation (evaluated in Python by the registry) and the run's records. It names no
  // implementation itself.
  var data = JSON.parse(document.getElementById("w-data").textContent);
  var grid = data.grid, entries = data.entries, records = data.records;
  function $(id) { return document.getElementById(id); }
  function fmtInt(n) { return Number(n).toLocaleString("en-US"); }
  function fmtBytes(b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i === 0 ? b.toFixed(0) : b.toPrecision(4)) + " " + units[i];
  }
  function fmtUs(ms) {
    if (ms === null || ms === undefined) { return "—"; }
    var v = Number(ms) * 1000;
    return (v >= 10000 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + " µs";
  }
  function text(el, t) { el.textContent = t; }
  function dtypes(r) { return r.dtype + " / " + r.weight_dtype; }
  function cell(tr, t, cls) {
    var td = document.createElement("td");
    td.textContent = t;
    if (cls) { td.className = cls; }
    tr.appendChild(td);
    return td;
  }
  function fill(id, values, chosen) {
    var sel = $(id);
    values.forEach(function (v) {
      var o = document.createElement("option");
      o.value = String(v); o.textContent = fmtInt(v);
      if (v === chosen) { o.selected = true; }
      sel.appendChild(o);
    });
  }
  fill("w-rows", grid.rows, data.defaults.rows);
  fill("w-d", grid.d, data.defaults.d);
  fill("w-groups", grid.groups, data.defaults.groups);
  $("w-norm").value = data.defaults.norm === "rmsnorm" ? "rmsnorm" : "layernorm";

  // implementations of the records that no registered entry describes
  var known = {};
  entries.forEach(function (e) { known[e.name] = true; });
  records.forEach(function (r) {
    if (r.implementation !== null && !known[r.implementation]) {
      known[r.implementation] = true;
      entries.push({ name: r.implementation, kind: r.kind || "", uses_groups: r.groups_effective !== null,
                     deterministic_by_design: r.deterministic_by_design === true,
                     available: false, error: "no model: " + r.implementation +
                       " is not registered on the machine that wrote this report" });
    }
  });

  var body = $("w-model-body"), rowsOf = {};
  entries.forEach(function (e) {
    var tr = document.createElement("tr");
    tr.id = "w-row-" + e.name.replace(/[^A-Za-z0-9._-]/g, "_");
    tr.setAttribute("data-implementation", e.name);
    var code = document.createElement("code"); code.textContent = e.name;
    var td = document.createElement("td"); td.appendChild(code); tr.appendChild(td);
    cell(tr, e.kind);
    rowsOf[e.name] = { geff: cell(tr, "", "w-geff"), writers: cell(tr, "", "w-writers"),
                       workspace: cell(tr, "", "w-workspace"), det: cell(tr, "", "w-det"),
                       meas: cell(tr, "", "w-meas") };
    body.appendChild(tr);
  });

  function determinism(e, writers) {
    if (e.deterministic_by_design) { return ["det-yes", "bitwise deterministic by design"]; }
    if (writers === null || writers === undefined) {
      return ["det-maybe", "not deterministic by design; no writers model"];
    }
    if (writers <= 1) {
      return ["det-maybe", "one writer per slot here: order cannot vary (not deterministic by design)"];
    }
    return ["det-no", "nondeterministic: " + fmtInt(writers) +
            " writers per slot land in run-dependent order"];
  }

  function update() {
    var ri = grid.rows.indexOf(Number($("w-rows").value));
    var di = grid.d.indexOf(Number($("w-d").value));
    var gi = grid.groups.indexOf(Number($("w-groups").value));
    var norm = $("w-norm").value;
    if (ri < 0 || di < 0 || gi < 0) { text($("w-status"), "Pick rows, d and GROUPS."); return; }
    var rows = grid.rows[ri], d = grid.d[di];
    text($("w-status"), data.problem || "");
    var hits = records.filter(function (r) { return r.norm === norm && r.rows === rows && r.d === d; });
    var shown = [];
    entries.forEach(function (e) {
      var c = rowsOf[e.name], k = e.uses_groups ? gi : 0, writers = null, geff = null;
      if (e.writers) {
        writers = e.writers[ri][di][k];
        geff = e.groups_effective[ri][di][k];
        var ws = (norm === "layernorm" ? e.workspace_ln : e.workspace_rms)[ri][di][k];
        text(c.geff, geff === null ? "—" : fmtInt(geff));
        text(c.writers, writers === null ? "—" : fmtInt(writers));
        text(c.workspace, fmtBytes(ws));
        var det = determinism(e, writers);
        c.det.className = "w-det " + det[0];
        text(c.det, det[1]);
      } else {
        [c.geff, c.writers, c.workspace].forEach(function (el) { text(el, "—"); });
        // what the entry declares is known without its model: by design, or not
        var by = e.deterministic_by_design ? ["det-yes", "bitwise deterministic by design"]
                                           : ["det-maybe", "not deterministic by design"];
        c.det.className = "w-det " + by[0];
        text(c.det, by[1] + "; " + (e.error || "no model"));
      }
      var mine = hits.filter(function (r) {
        if (r.implementation !== e.name) { return false; }
        if (!e.uses_groups || r.groups_effective === null) { return true; }
        return geff === null || r.groups_effective === geff;
      });
      shown = shown.concat(mine);
      // a median only of a record that competes (ok and correct against fp64); one that ran
      // but failed against fp64 is named ✗, never shown as a time
      var ran = mine.filter(function (r) { return r.status === "ok" && r.time_ms !== null; });
      text(c.meas, ran.length ? ran.map(function (r) {
        return (r.correct === true ? fmtUs(r.time_ms) : "✗ incorrect") + " (" + dtypes(r) + ")";
      }).join("; ") : "not measured");
    });
    var mbody = $("w-measured");
    while (mbody.firstChild) { mbody.removeChild(mbody.firstChild); }
    shown.forEach(function (r) {
      var tr = document.createElement("tr");
      [r.implementation, r.norm, dtypes(r),
       (r.groups_effective === null ? "—" : String(r.groups_effective)), r.status,
       (r.correct === null ? "—" : r.correct ? "yes" : "✗ no"),
       (r.status === "ok" ? fmtUs(r.time_ms) : "—"),
       (r.deterministic === null ? "—" : (r.deterministic ? "yes" : "no") +
        (r.distinct_results !== null ? " (" + r.distinct_results + "/" + r.repeats + " distinct)" : ""))
      ].forEach(function (v) { cell(tr, v); });
      mbody.appendChild(tr);
    });
    text($("w-measured-count"), shown.length ? String(shown.length) :
         "none (this run measured no case with these rows, d and GROUPS)");
  }
  ["w-rows", "w-d", "w-groups", "w-norm"].forEach(function (id) {
    $(id).addEventListener("input", update);
    $(id).addEventListener("change", update);
  });
  update();
})();
