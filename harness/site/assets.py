"""The site's one stylesheet and one script: small, written here, loaded from no network."""

from __future__ import annotations

CSS_FILE = "site.css"
JS_FILE = "site.js"

CSS = """\
body { font-family: system-ui, sans-serif; max-width: 76rem; margin: 0 auto; padding: 0 1rem 2rem;
       color: #1b1b1b; line-height: 1.45; }
header.site { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: baseline;
              border-bottom: 1px solid #ddd; padding: .8rem 0 .5rem; }
header.site a { color: #0b57d0; }
header.site .brand { font-weight: 700; color: #1b1b1b; text-decoration: none; }
h1, h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
h1 { font-size: 1.6rem; }
.muted { color: #555; font-size: .9rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th button.sort { font: inherit; font-weight: 600; background: none; border: 0; padding: 0;
                 cursor: pointer; color: inherit; text-align: inherit; }
th[aria-sort="ascending"] button.sort::after { content: " \\25B2"; }
th[aria-sort="descending"] button.sort::after { content: " \\25BC"; }
.filter { margin: .4rem 0; }
.filter input { font: inherit; padding: .2rem .4rem; width: min(24rem, 100%); }
.bad { color: #a50e0e; font-weight: 600; }
.badge { display: inline-block; border: 1px solid; border-radius: .3rem; padding: 0 .3rem;
         margin: .05rem 0; font-size: .8rem; white-space: nowrap; }
.badge.bad { color: #a50e0e; background: #fdecea; }
.badge.warn { color: #7a4f01; background: #fff4e0; font-weight: 600; }
.badge.good { color: #1e6b2a; background: #edf7ed; }
.badge.info { color: #555; background: #f7f7f7; }
tr.tier-incomplete td, tr.tier-failed-a-check td { background: #fff8f8; }
dl.verdicts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .8rem; }
dl.verdicts dt { font-weight: 600; }
dl.verdicts dd { margin: 0; }
.headline-value { font-size: 1.4rem; font-weight: 700; }
code { background: #f3f3f3; padding: 0 .2rem; word-break: break-all; }
ul.notes li { margin: .2rem 0; }
"""

# Sorting and filtering of every table.sortable. Without JavaScript the tables still read:
# they are written best first, and the filter box only appears when the script runs.
JS = """\
(function () {
  "use strict";

  function key(row, index) {
    var cell = row.cells[index];
    var value = cell.getAttribute("data-value");
    if (value !== null) {
      return value === "" ? null : parseFloat(value);
    }
    return cell.textContent.trim().toLowerCase();
  }

  function compare(a, b) {
    if (a === b) { return 0; }
    if (a === null) { return 1; }
    if (b === null) { return -1; }
    return a < b ? -1 : 1;
  }

  function sort(table, index) {
    var heads = table.tHead.rows[0].cells;
    var ascending = heads[index].getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var ka = key(a, index), kb = key(b, index);
      if (ka === null || kb === null) { return compare(ka, kb); }
      return ascending ? compare(ka, kb) : compare(kb, ka);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(heads, function (head) {
      head.setAttribute("aria-sort", "none");
    });
    heads[index].setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function filter(table, text, count) {
    var words = text.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var content = row.textContent.toLowerCase();
      var match = words.every(function (word) { return content.indexOf(word) !== -1; });
      row.hidden = !match;
      shown += match ? 1 : 0;
    });
    count.textContent = shown + " of " + table.tBodies[0].rows.length + " shown";
  }

  function setUp(table, number) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (head, index) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = head.textContent;
      button.addEventListener("click", function () { sort(table, index); });
      head.textContent = "";
      head.appendChild(button);
      head.setAttribute("aria-sort", "none");
    });
    var box = document.createElement("div");
    box.className = "filter";
    var input = document.createElement("input");
    input.type = "search";
    input.id = "filter-" + number;
    input.placeholder = "Filter rows (all words must match)";
    input.setAttribute("aria-label", "Filter the rows of this table");
    var count = document.createElement("span");
    count.className = "muted";
    input.addEventListener("input", function () { filter(table, input.value, count); });
    box.appendChild(input);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(count);
    var wrapper = table.parentNode.classList.contains("scroll") ? table.parentNode : table;
    wrapper.parentNode.insertBefore(box, wrapper);
    filter(table, "", count);
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), setUp);
  });
})();
"""
