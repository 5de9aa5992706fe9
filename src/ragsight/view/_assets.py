"""The viewer's page shell: style sheet, script, Content-Security-Policy, and how data text is
written into HTML.

As in the HTML report, no byte comes from elsewhere (no CDN, font or image), and the policy
allows only this style sheet and this script, by hash; the viewer adds what an application needs:
its own origin for the label requests (``connect-src``) and the filter forms (``form-action``).
Every text from the data goes through :func:`t`: HTML-escaped, with control and direction-changing
characters shown as visible marks instead of acting on the page.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from typing import Any
from urllib.parse import quote

__all__ = ["CSP", "CSS", "SCRIPT", "e", "page", "t", "url", "visible"]

CSS = """
:root{--ok:#1a7f37;--ok-bg:#e6f4ea;--bad:#b42318;--bad-bg:#fdecea;--muted:#5f6368;--line:#d0d7de;
--mark:#fff1a8;--accent:#0b57d0;--focus:#fff8c5}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1280px;padding:.6rem 1.2rem 3rem;color:#1f2328;line-height:1.45;background:#fff}
header.top{display:flex;flex-wrap:wrap;gap:.3rem 1rem;align-items:baseline;border-bottom:2px solid var(--line);
padding-bottom:.3rem;margin-bottom:.6rem}
header.top .brand{font-weight:700}
h1{font-size:1.4rem;margin:.3rem 0}h2{font-size:1.15rem;margin:1.4rem 0 .4rem}h3{font-size:1rem;margin:1rem 0 .3rem}
a{color:var(--accent)}
table{border-collapse:collapse;margin:.4rem 0 .8rem;font-size:.9rem}
th,td{border:1px solid var(--line);padding:.2rem .5rem;text-align:right;vertical-align:top}
th{background:#f6f8fa}th.l,td.l{text-align:left}
td.q{text-align:left;max-width:40em;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
.muted{color:var(--muted);font-size:.88rem}
.warn{color:var(--bad);background:var(--bad-bg);padding:.4em .6em;border-radius:4px}
form.filters{display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:end;background:#f6f8fa;
padding:.5rem .7rem;border-radius:6px;border:1px solid var(--line)}
form.filters label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted)}
input,select,button{font:inherit;font-size:.9rem}
input[type=number]{width:6em}input[type=search]{width:18em}
.pager{display:flex;gap:1rem;align-items:center;margin:.4rem 0}
.badge{display:inline-block;font-size:.8rem;border-radius:3px;padding:0 .35rem;background:#eef1f4;white-space:nowrap}
.badge.low{background:var(--bad-bg);color:var(--bad)}.badge.failed{background:var(--bad);color:#fff}
.badge.skipped,.badge.undetermined,.badge.missing{color:var(--muted)}
.field{margin:.5rem 0}.field>b{display:block;font-size:.8rem;color:var(--muted);text-transform:uppercase;
letter-spacing:.03em}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
ol.contexts{padding-left:0;list-style:none}ol.contexts>li{margin:.3rem 0;padding:.3rem .5rem;
border-left:4px solid var(--line)}
mark{background:var(--mark);padding:0 .1rem}
.ctl{color:var(--bad);background:var(--bad-bg);border-radius:2px;font-size:.8em;padding:0 .1em}
section.metric{border:1px solid var(--line);border-radius:6px;padding:.3rem .8rem .6rem;margin:.6rem 0}
ul.claims{list-style:none;padding-left:0;margin:.3rem 0}
li.claim{margin:.3rem 0;padding:.3rem .55rem;border-radius:4px;border-left:4px solid}
li.claim.ok{background:var(--ok-bg);border-color:var(--ok)}li.claim.bad{background:var(--bad-bg);border-color:var(--bad)}
.verdict{font-weight:700}li.claim.ok .verdict{color:var(--ok)}li.claim.bad .verdict{color:var(--bad)}
.why,.support{font-size:.86rem;margin-top:.15rem}.support q{background:var(--mark)}
[data-group].focus{outline:3px solid var(--accent);outline-offset:2px}
.lbl{display:inline-flex;gap:.3rem;margin-left:.4rem;vertical-align:middle}
.lbl button{border:1px solid var(--line);background:#fff;border-radius:4px;padding:0 .45rem;cursor:pointer}
.lbl button[aria-pressed=true][data-value="1"]{background:var(--ok);color:#fff;border-color:var(--ok)}
.lbl button[aria-pressed=true][data-value="0"]{background:var(--bad);color:#fff;border-color:var(--bad)}
.lbl button[aria-pressed=true] kbd{background:transparent;color:inherit}
.by{font-size:.8rem;color:var(--muted);margin-left:.4rem}
.reviewer{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:.4rem .7rem;margin:.5rem 0}
.status{font-weight:600;color:var(--ok);margin-left:.6rem}.status.bad{color:var(--bad)}
nav.sample{display:flex;flex-wrap:wrap;gap:.3rem 1rem;margin:.3rem 0}
details.call{border:1px solid var(--line);border-radius:4px;margin:.3rem 0;padding:.2rem .5rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8rem;background:#f6f8fa;padding:.4rem;border-radius:4px}
kbd{border:1px solid var(--line);border-radius:3px;padding:0 .25rem;font-size:.8rem;background:#f6f8fa}
.trends{display:flex;flex-wrap:wrap;gap:.8rem}figure{margin:0;border:1px solid var(--line);border-radius:6px;
padding:.3rem .5rem}figcaption{font-size:.8rem;color:var(--muted)}
svg .line{fill:none;stroke:#0b57d0;stroke-width:1.5}svg .dot{fill:#0b57d0}svg .axis{stroke:#8c959f}
svg text{font-size:10px;fill:#1f2328;font-family:system-ui,sans-serif}
@media (max-width:700px){body{padding:.4rem .5rem 2rem}}
"""

SCRIPT = r"""(function(){
var errs=[];function put(){if(document.body){document.body.setAttribute("data-js-errors",errs.join(" | "));}}
window.addEventListener("error",function(e){errs.push("error: "+(e.message||e.type));put();},true);
document.addEventListener("securitypolicyviolation",function(e){errs.push("csp: "+e.violatedDirective+" "+e.blockedURI);put();});
var KEY="ragsight.reviewer";
function who(){try{return localStorage.getItem(KEY)||"";}catch(x){return "";}}
function setWho(v){try{localStorage.setItem(KEY,v);}catch(x){}}
var HIDDEN=/[\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
function shown(n){return String(n).replace(HIDDEN,function(c){return "\\u"+("000"+c.charCodeAt(0).toString(16)).slice(-4);});}
function status(msg,bad){var s=document.getElementById("status");if(s){s.textContent=msg;s.className=bad?"status bad":"status";}}
function groups(){return Array.prototype.slice.call(document.querySelectorAll("[data-group]"));}
var cur=-1;
function focusAt(i){var g=groups();if(!g.length)return;i=Math.max(0,Math.min(g.length-1,i));
if(cur>=0&&g[cur])g[cur].classList.remove("focus");cur=i;g[i].classList.add("focus");
g[i].scrollIntoView({block:"nearest"});}
function paint(group){var by={};try{by=JSON.parse(group.getAttribute("data-by")||"{}");}catch(x){}
var mine=by[who()];group.querySelectorAll("button[data-value]").forEach(function(b){
b.setAttribute("aria-pressed",mine!==undefined&&String(mine)===b.getAttribute("data-value")?"true":"false");});
var names=Object.keys(by);var t=group.querySelector(".by");
if(t){t.textContent=names.length?"labels: "+names.map(function(n){return shown(n)+"="+by[n];}).join(", "):"";}}
function send(btn,value){var name=who();var group=btn.closest("[data-group]");
if(!name){status("Type your name first (kept in this browser only).",true);var box=document.getElementById("who");if(box)box.focus();return;}
var d=btn.dataset;var body={run:d.run,sample:d.sample,metric:d.metric,claim:d.claim===undefined?null:Number(d.claim),
value:value,who:name};var headers={"Content-Type":"application/json"};
var token=document.body.getAttribute("data-token");if(token)headers["X-Ragsight-Token"]=token;
status("saving...");
fetch("/api/labels",{method:"POST",headers:headers,body:JSON.stringify(body),credentials:"same-origin"})
.then(function(r){return r.json().then(function(j){return [r.ok,j];});}).then(function(res){
if(!res[0]){status("not saved: "+(res[1].error||"refused"),true);return;}
var by={};try{by=JSON.parse(group.getAttribute("data-by")||"{}");}catch(x){}
if(value===null){delete by[name];}else{by[name]=value;}group.setAttribute("data-by",JSON.stringify(by));paint(group);
document.body.setAttribute("data-saved",String(Number(document.body.getAttribute("data-saved")||"0")+1));
status(res[1].message||"saved");}).catch(function(x){status("not saved: "+x,true);});}
function choose(group,value){var b=group.querySelector('button[data-value="'+(value===null?"1":String(value))+'"]');if(b)send(b,value);}
document.addEventListener("DOMContentLoaded",function(){
document.body.setAttribute("data-js","ran");
var box=document.getElementById("who");
if(box){box.value=who();box.addEventListener("change",function(){setWho(box.value.trim());groups().forEach(paint);
status(box.value.trim()?"labelling as "+shown(box.value.trim()):"");});}
groups().forEach(paint);
document.querySelectorAll("button[data-value]").forEach(function(b){b.addEventListener("click",function(){
var g=groups();var i=g.indexOf(b.closest("[data-group]"));if(i>=0)focusAt(i);
send(b,Number(b.getAttribute("data-value")));});});
document.addEventListener("keydown",function(ev){var tag=(ev.target&&ev.target.tagName)||"";
if(tag==="INPUT"||tag==="SELECT"||tag==="TEXTAREA"||ev.ctrlKey||ev.metaKey||ev.altKey)return;
var g=groups();var k=ev.key;
function go(id){var a=document.getElementById(id);if(a&&a.href){location.href=a.href;}}
if(k==="j"||k==="ArrowDown"){focusAt(cur+1);ev.preventDefault();}
else if(k==="k"||k==="ArrowUp"){focusAt(cur<0?0:cur-1);ev.preventDefault();}
else if((k==="y"||k==="n"||k==="x")&&cur>=0&&g[cur]){choose(g[cur],k==="y"?1:(k==="n"?0:null));
if(k!=="x")focusAt(cur+1);ev.preventDefault();}
else if(k==="]"){go("next-unlabelled");}else if(k==="["){go("prev-unlabelled");}
else if(k==="."){go("next-sample");}else if(k===","){go("prev-sample");}
else if(k==="/"){var q=document.getElementById("q");if(q){q.focus();ev.preventDefault();}}
else if(k==="?"){var h=document.getElementById("keys");if(h){h.open=!h.open;}}});
put();});})();"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


_POLICY = (
    f"default-src 'none'; style-src '{_sha256(CSS)}'; script-src '{_sha256(SCRIPT)}'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'"
)
CSP = _POLICY + "; frame-ancestors 'none'"
"""The HTML report's policy (its own style and script by hash, nothing else) plus the viewer's
own origin for label requests and filter forms; no page may frame it. Sent as a header; the
pages repeat it in a ``<meta>`` element without ``frame-ancestors`` (which only a header can
carry)."""


def e(value: Any) -> str:
    """Escape a value for HTML text or an attribute."""
    return html.escape(str(value), quote=True)


# C0 and C1 controls (but tab, line feed, carriage return), and the characters that reorder or
# hide text (bidirectional overrides and isolates, zero-width characters, the byte-order mark)
_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def _visible(ch: str) -> str:
    code = ord(ch)
    shown = chr(0x2400 + code) if code < 0x20 else ("\u2421" if code == 0x7F else f"U+{code:04X}")
    return f'<span class="ctl" title="U+{code:04X}">{shown}</span>'


def t(value: Any) -> str:
    """Data text for HTML: escaped, with control and direction-changing characters shown as
    visible marks (a terminal would need them made visible as well; a page needs both)."""
    return visible(e(value))


def visible(markup: str) -> str:
    """HTML whose data text is already escaped, with its control and direction-changing
    characters shown as visible marks (as :func:`t` does)."""
    return _HIDDEN.sub(lambda m: _visible(m.group()), markup)


def url(*parts: str, **query: Any) -> str:
    """A path of the viewer from raw parts (each percent-encoded whole) and a query string
    (``None`` values left out; a list repeats its key). Not yet HTML-escaped."""
    path = "/" + "/".join(quote(str(p), safe="") for p in parts)
    items: list[tuple[str, str]] = []
    for k, v in query.items():
        if v is None or v == "":
            continue
        for one in v if isinstance(v, (list, tuple)) else [v]:
            items.append((k, str(one)))
    if items:
        path += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in items)
    return path


def page(title: str, body: str, *, token: str | None = None, crumbs: str = "") -> str:
    """A whole HTML document around ``body`` (already HTML)."""
    token_attr = f' data-token="{e(token)}"' if token else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{e(title)}</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
        f'<body data-js-errors=""{token_attr}><header class="top"><a class="brand" href="/">ragsight view</a>'
        f"{crumbs}</header>{body}</body></html>\n"
    )
