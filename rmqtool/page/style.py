"""The page's one style sheet, its one script and its Content Security Policy."""

from __future__ import annotations

# nothing may be fetched: no font, image, style or script from anywhere but the page itself
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
            "#bab0ac", "#c7c7c7")  # the last: `other`

STYLE = ("body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1000px;color:#222;padding:0 1em}"
         "h1{font-size:1.4em;word-break:break-all}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}"
         ".note{color:#555}svg.chart{max-width:100%;height:auto;display:block}"
         "svg text{font-size:11px;fill:#333}svg .axis{fill:#666}svg .empty{fill:#888}"
         ".gap{fill:#fbe3e3}.bar{fill:#4e79a7}.cell{fill:#2b5d8a}.hole{fill:#999}.damaged{fill:#d62728}"
         ".baseline,.tick line{stroke:#666}.committed path{fill:#222}"
         + "".join(f".c{i}{{fill:{c};background:{c}}}" for i, c in enumerate(_PALETTE))
         + ".legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3em 1em;margin:.3em 0}"
         ".swatch{display:inline-block;width:.8em;height:.8em;margin-right:.3em}"
         "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;"
         "text-align:left;word-break:break-all}.glance th{background:#f5f5f5}"
         "details{margin:.5em 0}summary{cursor:pointer;color:#555}.bad{color:#b00;font-weight:600}"
         ".good{color:#060}.unchecked{color:#555;font-style:italic}")

# after layout, each chart carries its drawn size, so a test (or a person) can see the browser drew it
SCRIPT = ("for(const c of document.querySelectorAll('svg.chart')){const b=c.getBoundingClientRect();"
          "c.dataset.width=Math.round(b.width);c.dataset.height=Math.round(b.height);"
          "if(b.width>0&&b.height>0)c.dataset.rendered='1'}")
