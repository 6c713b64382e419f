(function () {
  "use strict";
  var records = JSON.parse(document.getElementById("w-data").textContent);
  function $(id) { return document.getElementById(id); }
  function posInt(id) {
    var v = Number($(id).value);
    return (isFinite(v) && v >= 1) ? Math.floor(v) : null;
  }
  function fmtInt(n) { return n.toLocaleString("en-US"); }
  function fmtBytes(b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i === 0 ? b.toFixed(0) : b.toPrecision(4)) + " " + units[i];
  }
  function fmtMs(v) { return (v === null || v === undefined) ? "—" : Number(v).toPrecision(4) + " ms"; }
  function setDet(id, cls, text) { var el = $(id); el.className = cls; el.textContent = text; }
  function text(id, t) { $(id).textContent = t; }
  var GROUPED = { grouped_atomic: true, spin_lock: true, disjoint_block: true, disjoint_fused: true };

  function matches(r, norm, rows, d, g) {
    if (r.norm !== norm || r.rows !== rows || r.d !== d) { return false; }
    if (r.groups_effective !== null && r.groups_effective !== undefined) {
      return r.groups_effective === Math.min(g, rows);
    }
    return true;
  }
  function measuredCell(list, names) {
    var hits = list.filter(function (r) { return names.indexOf(r.implementation) >= 0 &&
                                                   r.status === "ok" && r.time_ms !== null; });
    if (!hits.length) { return "not measured"; }
    return hits.map(function (r) {
      return r.implementation + " " + fmtMs(r.time_ms) + " (" + r.dtype + ")";
    }).join("; ");
  }

  function update() {
    var rows = posInt("w-rows"), d = posInt("w-d"), g = posInt("w-groups");
    var norm = $("w-norm").value;
    var ids = ["w-atomic-writers", "w-grouped-writers", "w-spin-writers", "w-disjoint-writers",
               "w-atomic-workspace", "w-grouped-workspace", "w-spin-workspace",
               "w-disjoint-workspace", "w-workspace", "w-workspace-formula"];
    if (rows === null || d === null || g === null) {
      ids.forEach(function (id) { text(id, "—"); });
      text("w-status", "Enter positive integers for rows, d and GROUPS.");
      return;
    }
    text("w-status", "");
    var params = norm === "layernorm" ? 2 : 1;
    var gUsed = Math.min(g, rows);
    var perGroup = Math.ceil(rows / gUsed);
    var twoPass = gUsed * d * 4 * params;
    text("w-atomic-writers", fmtInt(rows));
    text("w-grouped-writers", fmtInt(perGroup));
    text("w-spin-writers", fmtInt(perGroup));
    text("w-disjoint-writers", "1");
    text("w-atomic-workspace", fmtBytes(d * 4 * params));
    text("w-grouped-workspace", fmtBytes(twoPass));
    text("w-spin-workspace", fmtBytes(twoPass) + " + locks");
    text("w-disjoint-workspace", fmtBytes(twoPass));
    text("w-workspace", fmtBytes(twoPass));
    text("w-workspace-formula", fmtInt(gUsed) + " GROUPS × " + fmtInt(d) + " × 4 B" +
         (params === 2 ? " × 2 (dγ and dβ)" : " (dγ only)") + " = " + fmtInt(twoPass) + " B");
    if (rows === 1) {
      setDet("w-atomic-det", "det-maybe", "one writer: order cannot vary here (nondeterministic in general)");
    } else {
      setDet("w-atomic-det", "det-no", "nondeterministic: " + fmtInt(rows) +
             " fp32 atomic adds per slot land in run-dependent order");
    }
    if (perGroup === 1) {
      setDet("w-grouped-det", "det-maybe", "one writer per partial here (rows ≤ GROUPS): order cannot vary");
      setDet("w-spin-det", "det-maybe", "one writer per partial here (rows ≤ GROUPS): order cannot vary");
    } else {
      setDet("w-grouped-det", "det-no", "nondeterministic: the order of the " + fmtInt(perGroup) +
             " atomic adds within a group varies (the reduce over groups is fixed-order)");
      setDet("w-spin-det", "det-no", "nondeterministic: the " + fmtInt(perGroup) +
             " writers of a group accumulate in lock-arrival order");
    }
    setDet("w-disjoint-det", "det-yes", "bitwise deterministic: one writer per slot, fixed-order reduce");

    var hits = records.filter(function (r) { return matches(r, norm, rows, d, g); });
    text("w-meas-atomic", measuredCell(hits, ["atomic"]));
    text("w-meas-grouped_atomic", measuredCell(hits, ["grouped_atomic"]));
    text("w-meas-spin_lock", measuredCell(hits, ["spin_lock"]));
    text("w-meas-disjoint", measuredCell(hits, ["disjoint_block", "disjoint_fused"]));
    var body = $("w-measured");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    hits.forEach(function (r) {
      var tr = document.createElement("tr");
      [r.implementation, r.norm, r.dtype + " / " + r.weight_dtype,
       (r.groups_effective === null ? "—" : String(r.groups_effective)), r.status,
       (r.status === "ok" ? fmtMs(r.time_ms) : "—"),
       (r.deterministic === null ? "—" : (r.deterministic ? "yes" : "no") +
        (r.distinct_results !== null ? " (" + r.distinct_results + "/" + r.repeats + " distinct)" : ""))
      ].forEach(function (v) {
        var td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    text("w-measured-count", hits.length ? String(hits.length) :
         "none (this run measured no case with these rows, d" + " and GROUPS)");
  }
  ["w-rows", "w-d", "w-groups", "w-norm"].forEach(function (id) {
    $(id).addEventListener("input", update);
    $(id).addEventListener("change", update);
  });
  update();
})();
