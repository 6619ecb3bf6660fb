"""The explorer's HTML page: the stored runs as JSON, inline CSS and JavaScript, nothing remote.

The JavaScript defines ``explorer(data)``, which returns pure functions (``runKey``, ``decode``,
``describe``) and ``mount(document)``, which draws the page (two inline SVG panels, the sliders,
the sentences). Only ``mount`` touches the page, so ``tests/test_explorer.py`` runs ``describe``
under node against runs recomputed by the kernel.
"""

from __future__ import annotations

import html
import json

__all__ = ["explorer_html", "EXPLORER_JS"]

_CSS = """
body{font-family:sans-serif;max-width:1180px;margin:auto;padding:0.8em;color:#222}
h1{font-size:1.45em;margin:0.2em 0}
.controls{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:0.35em 1.4em;
  background:#f4f4f4;padding:0.6em 0.9em;border-radius:6px}
.controls label{display:block;font-size:0.92em}
.controls input[type=range]{width:100%}
.controls output{font-weight:bold}
.panels{display:flex;flex-wrap:wrap;gap:1em;margin-top:0.6em}
.panel{flex:1 1 440px;min-width:0}
svg.chart{background:#fff;border:1px solid #ccc;width:100%;height:auto}
.legend svg{width:22px;height:14px;vertical-align:middle}
svg text{font-size:12px;fill:#333}
.legend{font-size:0.85em;line-height:1.5}
.legend span{display:inline-block;margin-right:0.9em}
#story{background:#eef5fb;border-left:4px solid #0173b2;padding:0.3em 0.8em;margin-top:0.5em;
  font-size:0.95em}
#story p{margin:0.3em 0}
button{font-size:0.95em;padding:0.15em 0.8em}
.note{font-size:0.88em;color:#444}
"""

#: The page's script (also run under node by the tests: ``explorer(data).describe(state)``).
EXPLORER_JS = r"""
function explorer(D) {
  var S = D.setup, G = D.grid, K = S.k;
  var COL = D.colors, NS = "http://www.w3.org/2000/svg";  // a name, nothing is loaded
  function fmt(x, p) { return (x === null || x === undefined) ? "n/a" : Number(x).toFixed(p); }
  function g3(x) {
    return (x === null || x === undefined) ? "n/a" : String(Number(x.toPrecision(3)));
  }
  function words(a) {
    a = a.map(String);
    if (a.length < 2) return a.join("");
    return a.slice(0, -1).join(", ") + " and " + a[a.length - 1];
  }
  function isHard(st) { return G.temperature[st.temperature] === "hard"; }
  function dataKey(st) { return st.separation + "/" + st.noise; }
  function runKey(st) {
    if (isHard(st)) return "h/" + dataKey(st) + "/" + st.lr + "/" + st.alpha0;
    return "s/" + dataKey(st) + "/" + (st.temperature - 1) + "/" + st.alpha0;
  }
  function hardKey(st) {  // the hard run at the soft runs' step, same data and start
    var i = G.lr.indexOf(S.lr_soft);
    return i < 0 ? null : "h/" + dataKey(st) + "/" + i + "/" + st.alpha0;
  }
  function decode(run) {
    var T = run.d.length, th = [], lab = [], prev = null;
    for (var t = 0; t < T; t++) {
      var row = [];
      for (var j = 0; j < K; j++) {
        var a = run.th[(t * K + j) * 2], b = run.th[(t * K + j) * 2 + 1];
        row.push(a === null || b === null ? null : [a / 1000, b / 1000]);
      }
      th.push(row);
      prev = run.lab[t] === "" ? prev : run.lab[t];
      lab.push(prev);
    }
    return {theta: th, labels: lab, dist: run.d};
  }
  function temperature(st) {
    var t = G.temperature[st.temperature], ds = D.data[dataKey(st)];
    return t === "em" ? ds.t_em : t;
  }
  function settingSentence(st, ds) {
    var a0 = G.alpha0[st.alpha0], r = (0.5 - a0) * ds.delta, t = G.temperature[st.temperature];
    var what = isHard(st) ? "Hard IFCA (each machine picks the model with the least loss on its " +
      "points) with step size " + G.lr[st.lr] :
      (t === "em" ? "Soft IFCA at EM's temperature 2 sigma^2/n = " + g3(ds.t_em) :
       "Soft IFCA at temperature " + t + " (EM's would be 2 sigma^2/n = " + g3(ds.t_em) + ")") +
      " with step size " + S.lr_soft;
    return what + ", from a start with alpha0 = " + a0 + ": each model starts (1/2 - alpha0) " +
      "Delta = " + fmt(r, 3) + " from its own line's truth, in a random direction.";
  }
  function misclustered(table) {
    // machines not held by the model matched to their line, under the best one-to-one matching
    var best = 0, total = 0, used = [];
    table.forEach(function (row) { row.forEach(function (c) { total += c; }); });
    (function go(j, got) {
      if (j === table.length) { best = Math.max(best, got); return; }
      for (var l = 0; l < table[j].length; l++) {
        if (used[l]) continue;
        used[l] = true; go(j + 1, got + table[j][l]); used[l] = false;
      }
    })(0, 0);
    return total - best;
  }
  function ruleCaveat(f, ds) {
    // the rule thresholds the MEAN matched distance; say when passing it means little
    var parts = [], wrong = misclustered(f.table);
    if (ds.tol >= ds.delta / 2) parts.push("0.6 sigma = " + g3(ds.tol) + " is at least half the " +
      "separation, Delta/2 = " + g3(ds.delta / 2) + ", so a model halfway between two lines " +
      "passes too: at this separation the rule says little");
    if (f.settled === 0) parts.push("the start itself already passes it");
    if (wrong > 0) parts.push(wrong + " of the " + S.m + " machines end on a model matched to " +
      "another line");
    return parts.length ? " Caveat: " + parts.join("; ") + "." : "";
  }
  function distSentence(run, ds) {
    var f = run.f, d = run.d, T = d.length - 1, out;
    var gone = d.indexOf(null);
    if (gone >= 0) {
      out = "The matched distance to the truths grows from " + fmt(f.dist_start, 3) +
        " beyond 10^4 at iteration " + gone + ": the run diverges.";
    } else {
      out = "The matched distance to the truths goes from " + fmt(f.dist_start, 3) + " to " +
        fmt(f.dist_end, 3) + " in " + T + " iterations (the oracle that knows the clusters: " +
        fmt(ds.oracle_dist, 3) + "); ";
      out += f.success ? "it is within 0.6 sigma = " + g3(ds.tol) + " from iteration " +
        f.settled + " on (the page's success rule)." + ruleCaveat(f, ds) :
        "it ends above 0.6 sigma = " + g3(ds.tol) + ": the run fails by the page's success rule.";
    }
    if (run.dv) out += " The kernel flags the run as diverged.";
    return out;
  }
  function assignSentence(run) {
    var f = run.f, rows = [], perfect = true, cols = [];
    f.table.forEach(function (row, j) {
      var parts = [];
      row.forEach(function (c, l) {
        if (c > 0) { parts.push(c + " of line " + (l + 1)); cols[l] = (cols[l] || 0) + 1; }
      });
      if (parts.length !== 1) perfect = false;
      rows.push(parts.length ? "model " + (j + 1) + " holds " + words(parts) : "model " +
        (j + 1) + " wins no machine (it moved " + fmt(f.moved[j], 2) + " from its start)");
    });
    for (var l = 0; l < K; l++) if (cols[l] !== 1) perfect = false;
    return "At the end (iteration " + S.n_iter + ") the models win " + words(f.counts_end) +
      " of the " + S.m +
      " machines: " + rows.join("; ") + (perfect ? ". Each model holds all the machines of one " +
      "line, and every line has its own model." : ".");
  }
  function stepSentence(st, ds) {
    if (!isHard(st)) return "";
    var lr = G.lr[st.lr], th = ds.thresholds, above = [];
    th.forEach(function (v, j) { if (lr >= v) above.push(j + 1); });
    var cond = " (thresholds 1/(p_j lambda_max(H_j)) of lines 1 to " + K + ": " +
      th.map(function (v) { return fmt(v, 2); }).join(", ") + "; IFCA with divisor m, all data)";
    if (above.length) return "Step size " + lr + " is at or above the threshold of line" +
      (above.length > 1 ? "s " : " ") + words(above) + cond + ": a model holding exactly that " +
      "line's machines does not contract along H_j's top direction.";
    return "Step size " + lr + " is below every line's threshold" + cond + ": a model holding " +
      "exactly one line's machines gets closer to their least-squares fit every step.";
  }
  function describe(st) {
    var run = D.runs[runKey(st)], ds = D.data[dataKey(st)], f = run.f;
    var text = [settingSentence(st, ds), distSentence(run, ds), assignSentence(run)];
    if (f.closest_pair !== null && f.closest_pair < 0.25 * ds.delta) {
      text.push("The two closest models end " + g3(f.closest_pair) + " apart, less than a " +
        "quarter of Delta = " + ds.delta + ".");
    }
    var s = stepSentence(st, ds);
    if (s) text.push(s);
    return {key: runKey(st), text: text, facts: f, temperature: temperature(st)};
  }
  function dataSentence(st) {
    var ds = D.data[dataKey(st)];
    return "Data: " + K + " regression lines y = a + b t on m = " + S.m + " machines with n = " +
      S.n + " points each; separation Delta = " + ds.delta + ", noise sigma = " + ds.sigma +
      (ds.snr === null ? "" : " (Delta sqrt(n) / sigma = " + ds.snr + ")") + ".";
  }
  // ------------------------------------------------------------------ drawing (browser only)
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function marker(j, x, y, r, attrs, parent) {
    if (j % 3 === 0) return el("circle", Object.assign({cx: x, cy: y, r: r}, attrs), parent);
    if (j % 3 === 1) return el("rect", Object.assign({x: x - 0.9 * r, y: y - 0.9 * r,
      width: 1.8 * r, height: 1.8 * r}, attrs), parent);
    var h = 1.25 * r;
    return el("polygon", Object.assign({points: x + "," + (y - h) + " " + (x - h) + "," +
      (y + 0.8 * h) + " " + (x + h) + "," + (y + 0.8 * h)}, attrs), parent);
  }
  function star(x, y, r, parent) {
    var p = [];
    for (var i = 0; i < 10; i++) {
      var a = -Math.PI / 2 + i * Math.PI / 5, q = i % 2 ? 0.45 * r : r;
      p.push((x + q * Math.cos(a)).toFixed(1) + "," + (y + q * Math.sin(a)).toFixed(1));
    }
    return el("polygon", {points: p.join(" "), fill: "#000", stroke: "#fff", "stroke-width": 0.8},
      parent);
  }
  function ticks(lo, hi, n, least) {
    var raw = (hi - lo) / n, p = Math.pow(10, Math.floor(Math.log10(raw))), s = p;
    [1, 2, 2.5, 5, 10].forEach(function (c) { if (c * p <= raw * 1.4) s = c * p; });
    if (least && s < least) s = least;
    var out = [];
    for (var v = Math.ceil(lo / s) * s; v <= hi + 1e-9; v += s) out.push(+v.toFixed(10));
    return out;
  }
  function axes(svg, box, xs, ys, sx, sy, xl, yl, fy) {
    xs.forEach(function (v) {
      el("line", {x1: sx(v), x2: sx(v), y1: box[1], y2: box[3], stroke: "#eee"}, svg);
      el("text", {x: sx(v), y: box[3] + 15, "text-anchor": "middle"}, svg).textContent = v;
    });
    ys.forEach(function (v) {
      el("line", {x1: box[0], x2: box[2], y1: sy(v), y2: sy(v), stroke: "#eee"}, svg);
      el("text", {x: box[0] - 5, y: sy(v) + 4, "text-anchor": "end"}, svg).textContent =
        fy ? fy(v) : v;
    });
    el("rect", {x: box[0], y: box[1], width: box[2] - box[0], height: box[3] - box[1],
      fill: "none", stroke: "#888"}, svg);
    el("text", {x: (box[0] + box[2]) / 2, y: box[3] + 32, "text-anchor": "middle"}, svg)
      .textContent = xl;
    el("text", {x: 14, y: (box[1] + box[3]) / 2, "text-anchor": "middle",
      transform: "rotate(-90 14 " + (box[1] + box[3]) / 2 + ")"}, svg).textContent = yl;
  }
  function drawPlane(svg, st, run, it) {
    var ds = D.data[dataKey(st)], L = ds.lim, box = [58, 12, 498, 452];
    svg.innerHTML = "";
    var sx = function (a) { return box[0] + (a - L[0]) / (L[1] - L[0]) * (box[2] - box[0]); };
    var sy = function (b) { return box[3] - (b - L[2]) / (L[3] - L[2]) * (box[3] - box[1]); };
    axes(svg, box, ticks(L[0], L[1], 6), ticks(L[2], L[3], 6), sx, sy, "intercept a", "slope b");
    var clip = el("clipPath", {id: "clipplane"}, el("defs", {}, svg));
    el("rect", {x: box[0], y: box[1], width: box[2] - box[0], height: box[3] - box[1]}, clip);
    var g = el("g", {"clip-path": "url(#clipplane)"}, svg), px = (box[2] - box[0]) / (L[1] - L[0]);
    var r = (0.5 - G.alpha0[st.alpha0]) * ds.delta;
    ds.star.forEach(function (s) {
      el("circle", {cx: sx(s[0]), cy: sy(s[1]), r: r * px, fill: "none", stroke: "#999",
        "stroke-dasharray": "5 4"}, g);
    });
    var lab = run.labels[it];
    ds.local.forEach(function (p, i) {
      var j = +lab[i];
      marker(j, sx(p[0]), sy(p[1]), 3.6, {fill: COL[j], stroke: "#333", "stroke-width": 0.4,
        opacity: 0.85}, g);
    });
    for (var j = 0; j < K; j++) {
      var pts = [];
      for (var t = 0; t <= it; t++) if (run.theta[t][j]) pts.push(sx(run.theta[t][j][0]).toFixed(1)
        + "," + sy(run.theta[t][j][1]).toFixed(1));
      el("polyline", {points: pts.join(" "), fill: "none", stroke: COL[j], "stroke-width": 2}, g);
      var s0 = run.theta[0][j];
      marker(j, sx(s0[0]), sy(s0[1]), 7, {fill: "#fff", stroke: COL[j], "stroke-width": 2.2}, g);
    }
    ds.star.forEach(function (s) { star(sx(s[0]), sy(s[1]), 11, g); });
    for (j = 0; j < K; j++) {
      var h = run.theta[it][j];
      if (h) marker(j, sx(h[0]), sy(h[1]), 8, {fill: COL[j], stroke: "#000",
        "stroke-width": 1.6}, g);
    }
  }
  function drawDist(svg, st, run, it) {
    var ds = D.data[dataKey(st)], box = [62, 12, 498, 262], T = run.dist.length - 1;
    svg.innerHTML = "";
    var hk = isHard(st) ? null : hardKey(st), ref = hk && D.runs[hk] ? D.runs[hk].d : null;
    var all = run.dist.concat(ref || [], [ds.oracle_dist, ds.tol]).filter(function (v) {
      return v !== null && v > 0; });
    var lo = Math.log10(Math.min.apply(null, all)) - 0.15;
    var hi = Math.log10(Math.min(Math.max.apply(null, all), 1e4)) + 0.15;
    if (hi - lo < 1) { lo -= 0.5; hi += 0.5; }
    var sx = function (t) { return box[0] + t / T * (box[2] - box[0]); };
    var sy = function (v) { return box[3] - (Math.log10(v) - lo) / (hi - lo) * (box[3] - box[1]); };
    var ys = [];
    for (var e = Math.floor(lo); e <= Math.ceil(hi); e++) [1, 2, 5].forEach(function (c) {
      var v = c * Math.pow(10, e), l = Math.log10(v);
      if (l >= lo && l <= hi && (c === 1 || hi - lo < 2.5)) ys.push(v);
    });
    axes(svg, box, ticks(0, T, 6, 1), ys, sx, sy, "iteration", "matched distance (log)",
      function (v) { return String(+v.toPrecision(2)); });
    function hline(v, dash, col) {
      if (v > 0) el("line", {x1: box[0], x2: box[2], y1: sy(v), y2: sy(v), stroke: col,
        "stroke-dasharray": dash, "stroke-width": 1.4}, svg);
    }
    hline(ds.tol, "8 3 2 3", "#c0392b");
    hline(ds.oracle_dist, "2 3", "#555");
    function curve(d, col, dash, w) {
      var pts = [];
      d.forEach(function (v, t) { if (v !== null && v > 0) pts.push(sx(t).toFixed(1) + "," +
        sy(Math.min(v, 1e4)).toFixed(1)); });
      el("polyline", {points: pts.join(" "), fill: "none", stroke: col, "stroke-width": w,
        "stroke-dasharray": dash}, svg);
    }
    if (ref) curve(ref, "#999", "6 4", 2);
    curve(run.dist, "#111", "", 2.4);
    el("line", {x1: sx(it), x2: sx(it), y1: box[1], y2: box[3], stroke: "#0173b2"}, svg);
    var v = run.dist[it];
    if (v !== null && v > 0) el("circle", {cx: sx(it), cy: sy(v), r: 4.5, fill: "#0173b2"}, svg);
  }
  function mount(doc) {
    var names = ["separation", "noise", "lr", "alpha0", "temperature"], st = {}, it = S.n_iter;
    var timer = null;
    names.forEach(function (nm) {
      var i = G[nm].indexOf(S.default[nm]);
      st[nm] = i < 0 ? 0 : i;
      var inp = doc.getElementById("s-" + nm);
      inp.max = G[nm].length - 1; inp.value = st[nm];
      inp.addEventListener("input", function () { st[nm] = +inp.value; it = S.n_iter; update(); });
    });
    (doc.location && doc.location.hash ? doc.location.hash.slice(1).split("&") : [])
      .forEach(function (kv) {  // e.g. #separation=1&temperature=2&iter=5
        var p = kv.split("="), nm = p[0], v = decodeURIComponent(p[1] || "");
        if (nm === "iter" && +v >= 0 && +v <= S.n_iter) { it = +v; return; }
        if (!G[nm]) return;
        var i = G[nm].map(String).indexOf(v);
        if (i >= 0) { st[nm] = i; doc.getElementById("s-" + nm).value = i; }
      });
    var itIn = doc.getElementById("s-iter"), play = doc.getElementById("play");
    itIn.max = S.n_iter;
    itIn.addEventListener("input", function () { it = +itIn.value; update(); });
    play.addEventListener("click", function () {
      if (timer) { clearInterval(timer); timer = null; play.textContent = "play"; return; }
      if (it >= S.n_iter) it = 0;
      play.textContent = "pause";
      timer = setInterval(function () {
        it += 1; update();
        if (it >= S.n_iter) { clearInterval(timer); timer = null; play.textContent = "play"; }
      }, 350);
    });
    function update() {
      var hard = isHard(st), ds = D.data[dataKey(st)];
      names.forEach(function (nm) {
        var v = G[nm][st[nm]], o = doc.getElementById("v-" + nm);
        if (nm === "temperature") o.textContent = v === "hard" ? "hard (argmin)" :
          (v === "em" ? "EM: 2 sigma^2/n = " + g3(ds.t_em) : String(v));
        else if (nm === "lr") {
          o.textContent = hard ? String(v) : S.lr_soft + " (fixed for soft runs)";
        }
        else o.textContent = String(v);
      });
      doc.getElementById("s-lr").disabled = !hard;
      itIn.value = it;
      doc.getElementById("v-iter").textContent = it + " of " + S.n_iter;
      var run = decode(D.runs[runKey(st)]), dsc = describe(st);
      doc.getElementById("data-sentence").textContent = dataSentence(st);
      var story = doc.getElementById("story");
      story.innerHTML = "";
      dsc.text.forEach(function (s) { story.appendChild(doc.createElement("p")).textContent = s; });
      doc.getElementById("ref-legend").style.display = hard ? "none" : "";
      drawPlane(doc.getElementById("plane"), st, run, it);
      drawDist(doc.getElementById("dist"), st, run, it);
    }
    update();
  }
  return {runKey: runKey, decode: decode, describe: describe, dataSentence: dataSentence,
          mount: mount};
}
if (typeof document !== "undefined") {
  explorer(JSON.parse(document.getElementById("explorer-data").textContent)).mount(document);
}
"""


def _legend_item(svg, label):
    return f"<span><svg width='22' height='14' style='border:0'>{svg}</svg> {label}</span>"


def _plane_legend(colors):
    shapes = ("<circle cx='11' cy='7' r='5' fill='{c}' stroke='#000'/>",
              "<rect x='6' y='2' width='10' height='10' fill='{c}' stroke='#000'/>",
              "<polygon points='11,1 4,12 18,12' fill='{c}' stroke='#000'/>")
    items = [_legend_item("<polygon points='11,1 13,5 18,6 14,9 15,14 11,11 7,14 8,9 4,6 9,5' "
                          "fill='#000'/>", "true (a, b) of each line")]
    for j, c in enumerate(colors):
        items.append(_legend_item(shapes[j % 3].format(c=c), f"model {j + 1}"))
    items.append("<span>(large filled: the model now; hollow: its start; line: its path; small: "
                 "the machines that pick it, each at its own least-squares fit)</span>")
    items.append(_legend_item("<circle cx='11' cy='7' r='6' fill='none' stroke='#999' "
                              "stroke-dasharray='3 2'/>", "Assumption 1's ball, radius "
                              "(1/2 - alpha0) Delta, around each truth"))
    return "".join(items)


def _dist_legend():
    line = "<line x1='1' x2='21' y1='7' y2='7' stroke='{c}' stroke-width='2' {d}/>"
    ref = _legend_item(line.format(c="#999", d="stroke-dasharray='5 3'"),
                       "hard IFCA, same data, start and step")
    return "".join([
        _legend_item(line.format(c="#111", d=""), "this run"),
        f"<span id='ref-legend'>{ref}</span>",
        _legend_item(line.format(c="#555", d="stroke-dasharray='2 3'"),
                     "oracle (clusters known, least squares per cluster)"),
        _legend_item(line.format(c="#c0392b", d="stroke-dasharray='8 3 2 3'"),
                     "0.6 sigma: the success rule"),
    ])


def _slider(name, label):
    return (f"<label>{label}: <output id='v-{name}'></output>"
            f"<input type='range' id='s-{name}' min='0' max='0' step='1' value='0'></label>")


def explorer_html(data):
    """The page for :func:`mixlinreg.teach.write_explorer`'s ``data`` (one string, no remote
    resource: inline CSS, SVG and JavaScript, the runs as inline JSON)."""
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    s = data["setup"]
    sliders = "".join([
        _slider("separation", "separation Delta"), _slider("noise", "noise sigma"),
        _slider("lr", "step size lr"), _slider("temperature", "temperature (soft IFCA)"),
        _slider("alpha0", "alpha0 (start closeness)"),
        "<label>iteration: <output id='v-iter'></output>"
        "<input type='range' id='s-iter' min='0' max='0' step='1' value='0'></label>"])
    intro = (
        "Move the sliders to pick a run; the plane shows the models' paths in the parameter "
        "space (a, b) and each machine's own least-squares fit coloured by the model it picks "
        "at the chosen iteration (colour and shape are the model, not the true line); the right "
        "panel its matched distance to the truths. Every run on this page is a real run of the "
        "package, computed once by <code>mixlinreg teach explorer</code> "
        f"({s['n_hard'] + s['n_soft']} runs) and stored here: hard IFCA by "
        "<code>mixlinreg.teach.ifca_path</code> (<code>mixlinreg.ifca</code> with <code>trace=True</code>), soft IFCA by "
        "<code>mixlinreg.teach.soft_path</code> (<code>mixlinreg.baselines.soft_ifca</code>). The "
        "page computes nothing but the drawing; its sentences are worded from each run's stored "
        "facts (<code>mixlinreg.teach.path_facts</code>). Seeds: data "
        f"{s['data_seed']}, start directions {s['init_seed']} (the same for every alpha0); "
        f"{s['n_iter']} iterations. In a notebook, <code>mixlinreg.teach.sliders()</code> runs "
        "the kernel for any value.")
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>mixlinreg teach: IFCA explorer</title>", f"<style>{_CSS}</style>", "</head><body>",
        "<h1>IFCA explorer: step size, separation, noise, temperature, start</h1>",
        f"<p class='note'>{intro} <a href='index.html'>All teaching views</a>.</p>",
        f"<div class='controls'>{sliders}<div><button id='play' type='button'>play</button></div>"
        "</div>",
        f"<p class='note'>{html.escape(data['crossed'])}</p>",
        "<div class='panels'><div class='panel'><svg id='plane' class='chart' "
        "viewBox='0 0 510 492' role='img' aria-label='parameter plane'></svg>"
        f"<div class='legend'>{_plane_legend(data['colors'])}</div></div>",
        "<div class='panel'><svg id='dist' class='chart' viewBox='0 0 510 300' role='img' "
        "aria-label='matched distance per iteration'></svg>"
        f"<div class='legend'>{_dist_legend()}</div>",
        "<p id='data-sentence'></p><div id='story'></div></div></div>",
        f"<script type='application/json' id='explorer-data'>{blob}</script>",
        f"<script>{EXPLORER_JS}</script>", "</body></html>", ""])
