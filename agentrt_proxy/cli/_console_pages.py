"""The console's pages as HTML: every value is HTML-escaped here, after ``console_read``
sanitized and bounded it as ``show`` does. No inline script or style (the CSP forbids both):
the one stylesheet and the one script are ``console_assets``. Without the script every page
works: the approve and reject buttons lead to a confirmation page with a plain POST form.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from urllib.parse import quote, urlencode

from agentrt_proxy.cli._console_read import (
    FILTER_ALL,
    FILTER_FAILED,
    FILTER_UNKNOWN,
    FILTER_WAITING,
    RUN_FILTERS,
    Card,
    RunFilter,
    RunRow,
)
from agentrt_proxy.text import console_text as T


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def page(title: str, body: str, *, live: bool = False) -> str:
    nav = "".join(f'<li><a href="{esc(href)}">{esc(name)}</a></li>' for href, name in T.NAV)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f"<title>{esc(title)} · {esc(T.TITLE)}</title>"
        '<link rel="stylesheet" href="/static/console.css">'
        '<script src="/static/console.js" defer></script></head>'
        f"<body{' data-live' if live else ''}>"
        f'<a class="skip" href="#main">{esc(T.SKIP_LINK)}</a>'
        f'<header><p class="brand">{esc(T.TITLE)}</p><nav><ul>{nav}</ul></nav></header>'
        f'<main id="main" tabindex="-1">{body}</main></body></html>'
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    inner = f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
    return f'<div class="scroll"><table class="{esc(cls)}">{inner}</table></div>'


def hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def _binding(c: Card) -> str:
    a = c.approval
    return hidden("run", a.run_id) + hidden("approval", a.id) + hidden("hash", a.hash)


def _fields(rows: list[tuple[str, int, str]]) -> str:
    if not rows:
        return f"<p>{esc(T.ARGUMENTS_NONE)}</p>"
    return table((T.ARG_NAME, T.ARG_BYTES, T.ARG_VALUE), [(n, str(size), v) for n, size, v in rows], "fields")


def _facts(c: Card) -> str:
    a = c.approval
    facts = [
        (T.FIELD_SERVER, esc(c.server)),
        (T.FIELD_TOOL, esc(c.tool)),
        (T.FIELD_OFFERED, esc(c.offered)),
        (T.FIELD_KIND, esc(c.kind)),
        (T.FIELD_RUN, f'<a href="/run?id={quote(a.run_id)}">{esc(a.run_id)}</a>'),
        (T.FIELD_WAITED, esc(c.waited)),
        (T.FIELD_EXPIRES, esc(c.expires)),
    ]
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


def approval_card(c: Card) -> str:
    a = c.approval
    payees = "\n".join(c.payees) or T.CONFIRM_NO_PAYEE
    data = {
        "approval": a.id,
        "confirm-title": T.CONFIRM_TITLE,
        "confirm-text": T.CONFIRM_TEXT.format(tool=c.tool, server=c.server),
        "confirm-yes": T.CONFIRM_YES.format(tool=c.tool),
        "reject-title": T.REJECT_TITLE,
        "reject-text": T.REJECT_TEXT.format(tool=c.tool, server=c.server),
        "reject-yes": T.REJECT_YES.format(tool=c.tool),
        "payees": payees,
    }
    attrs = " ".join(f'data-{k}="{esc(v)}"' for k, v in data.items())
    known = "".join(f"<li>{esc(line)}</li>" for line in c.known)
    parts = [
        f'<article class="approval" id="approval-{esc(a.id)}" {attrs}>',
        f'<h2>{esc(c.tool)} <span class="muted">{esc(T.ON_SERVER.format(server=c.server))}</span></h2>',
        _facts(c),
        f"<h3>{esc(T.ARGUMENTS_HEAD)}</h3>",
        _fields(c.arguments),
        f'<h3 class="untrusted">{esc(T.PRESENTATION_HEAD)}</h3>',
        f'<div class="untrusted">{_fields(c.presentation)}</div>',
    ]
    if c.reason:
        parts.append(f'<p class="untrusted">{esc(T.REASON.format(reason=c.reason))}</p>')
    if c.unread:
        parts.append(f'<p class="warn">{esc(c.unread)}</p>')
    if known:
        parts.append(f"<h3>{esc(T.KNOWN_HEAD)}</h3><ul>{known}</ul>")
    parts.append(
        '<div class="actions">'
        f'<form method="get" action="/approve" class="decide" data-verb="approve">{_binding(c)}'
        f'<button type="submit" class="approve">{esc(T.APPROVE)}</button></form>'
        f'<form method="get" action="/reject" class="decide" data-verb="reject">{_binding(c)}'
        f'<button type="submit" class="reject">{esc(T.REJECT)}</button></form></div></article>'
    )
    return "".join(parts)


def _dialog(csrf: str) -> str:
    """The confirmation the script opens in place of the confirmation page (filled by it)."""
    return (
        '<dialog id="confirm" aria-labelledby="confirm-title">'
        '<form method="post" action="/decide" id="confirm-form">'
        + hidden("csrf", csrf)
        + hidden("verb", "")
        + hidden("run", "")
        + hidden("approval", "")
        + hidden("hash", "")
        + hidden("confirmed", "yes")
        + '<h2 id="confirm-title"></h2><p id="confirm-text"></p><ul id="confirm-payees"></ul>'
        f'<p id="confirm-note-box"><label for="confirm-note">{esc(T.REJECT_NOTE)}</label>'
        '<textarea id="confirm-note" name="note" rows="3"></textarea></p>'
        '<p class="actions"><button type="submit" id="confirm-yes"></button>'
        f'<button type="button" id="confirm-cancel">{esc(T.CANCEL)}</button></p></form></dialog>'
    )


def approvals_page(cards: list[Card], csrf: str) -> str:
    body = [
        f"<h1>{esc(T.APPROVALS_HEAD.format(count=len(cards)))}</h1>",
        f'<p class="muted" id="live-note">{esc(T.LIVE_OFF)}</p>',
        f'<p class="muted" id="live-on" hidden>{esc(T.LIVE_ON)}</p>',
        '<div id="live" role="status" aria-live="polite"></div>',
        f'<p id="new-arrived" hidden><a href="/">{esc(T.NEW_ARRIVED)}</a></p>',
    ]
    if not cards:
        body.append(f'<p id="none-waiting">{esc(T.APPROVALS_NONE)}</p>')
    body += [approval_card(c) for c in cards]
    body.append(_dialog(csrf))
    return page(T.APPROVALS_HEAD.format(count=len(cards)), "".join(body), live=True)


def confirm_page(c: Card, verb: str, csrf: str) -> str:
    """The confirmation as a page of its own (no script): the card, then the POST form."""
    approve = verb == "approve"
    title = T.CONFIRM_TITLE if approve else T.REJECT_TITLE
    text = (T.CONFIRM_TEXT if approve else T.REJECT_TEXT).format(tool=c.tool, server=c.server)
    payees = "".join(f"<li>{esc(p)}</li>" for p in c.payees) or f"<li>{esc(T.CONFIRM_NO_PAYEE)}</li>"
    note = (
        ""
        if approve
        else f'<p><label for="note">{esc(T.REJECT_NOTE)}</label>'
        '<textarea id="note" name="note" rows="3" required autofocus></textarea></p>'
    )
    yes = (T.CONFIRM_YES if approve else T.REJECT_YES).format(tool=c.tool)
    form = (
        f'<form method="post" action="/decide" class="confirm">{hidden("csrf", csrf)}{hidden("verb", verb)}'
        f"{_binding(c)}{hidden('confirmed', 'yes')}<h2>{esc(title)}</h2><p>{esc(text)}</p>"
        f'<ul class="payees">{payees if approve else ""}</ul>{note}<p class="actions">'
        f'<button type="submit" class="{esc(verb)}"{"" if not approve else " autofocus"}>{esc(yes)}</button>'
        f' <a href="/">{esc(T.CANCEL)}</a></p></form>'
    )
    card = approval_card(c).replace('<div class="actions">', '<div class="actions" hidden>', 1)
    return page(title, form + card)


def message_page(title: str, lines: Sequence[str], cls: str = "") -> str:
    body = "".join(f"<p>{esc(line)}</p>" for line in lines)
    return page(title, f'<h1>{esc(title)}</h1><div class="{esc(cls)}">{body}</div><p><a href="/">{esc(T.BACK)}</a></p>')


def continue_page() -> str:
    """After the link was exchanged from another page: on to the console, without the token."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">'
        f'<title>{esc(T.TITLE)}</title></head><body><p><a href="/">{esc(T.CONTINUE)}</a></p></body></html>'
    )


def refused_page(reason: str) -> str:
    return message_page(T.REFUSED_TITLE, [reason, T.REFUSED_NOTHING_CHANGED], "refused")


def runs_page(rows: list[RunRow], f: RunFilter, searched: int, total: int, error: str = "") -> str:
    options = {
        FILTER_ALL: T.RUNS_STATUS_ALL,
        FILTER_WAITING: T.RUNS_STATUS_WAITING,
        FILTER_UNKNOWN: T.RUNS_STATUS_UNKNOWN,
        FILTER_FAILED: T.RUNS_STATUS_FAILED,
    }
    select = "".join(
        f'<option value="{v}"{" selected" if f.status == v else ""}>{esc(options[v])}</option>' for v in RUN_FILTERS
    )
    form = (
        f'<form method="get" action="/runs" class="filter"><fieldset><legend>{esc(T.RUNS_FILTER)}</legend>'
        f'<label>{esc(T.RUNS_STATUS)} <select name="status">{select}</select></label> '
        f'<label>{esc(T.RUNS_TOOL)} <input name="tool" value="{esc(f.tool)}"></label> '
        f'<label>{esc(T.RUNS_DAY)} <input name="day" value="{esc(f.day)}" inputmode="numeric"></label> '
        f'<button type="submit">{esc(T.RUNS_APPLY)}</button></fieldset></form>'
    )
    body = [f"<h1>{esc(T.RUNS_HEAD)}</h1>", form]
    if error:
        body.append(f'<p class="refused">{esc(error)}</p>')
    if rows:
        head = "".join(f'<th scope="col">{esc(h)}</th>' for h in T.RUNS_COLUMNS)
        trs = "".join(
            f'<tr><td><a href="/run?{urlencode({"id": r.run_id})}">{esc(r.cells[0])}</a></td>'
            + "".join(f"<td>{esc(c)}</td>" for c in r.cells[1:])
            + "</tr>"
            for r in rows
        )
        body.append(
            f'<div class="scroll"><table class="runs"><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table></div>'
        )
    else:
        body.append(f"<p>{esc(T.RUNS_NONE)}</p>")
    body.append(f'<p class="muted">{esc(T.RUNS_READ.format(read=searched, total=total))}</p>')
    return page(T.RUNS_HEAD, "".join(body))


def run_page(run_id: str, lines: list[str], more: bool) -> str:
    text = "\n".join(lines)
    body = f"<h1>{esc(T.RUN_HEAD.format(run=run_id))}</h1><pre>{esc(text)}</pre>"
    if more:
        body += f"<p>{esc(T.RUN_MORE_EVENTS)}</p>"
    return page(T.RUN_HEAD.format(run=run_id), body)


def rows_page(title: str, headers: Sequence[str], rows: list[list[str]], none: str, notes: Sequence[str] = ()) -> str:
    body = f"<h1>{esc(title)}</h1>" + (table(headers, rows) if rows else f"<p>{esc(none)}</p>")
    body += "".join(f'<p class="muted">{esc(n)}</p>' for n in notes)
    return page(title, body)


def _section(title: str, headers: Sequence[str], rows: list[list[str]], none: str, cls: str) -> str:
    inner = table(headers, rows, cls) if rows else f"<p>{esc(none)}</p>"
    return f'<section class="{esc(cls)}"><h2>{esc(title)}</h2>{inner}</section>'


def tools_page(
    now: list[list[str]], cleared: list[list[str]], shown: int, pinned: list[list[str]], notes: Sequence[str]
) -> str:
    """The tools serving withholds now, those withheld and since back on their pins, and those the
    scan refused at the pin (read-only, every value sanitized by ``console_read``)."""
    body = [
        f"<h1>{esc(T.TOOLS_HEAD)}</h1>",
        _section(T.WITHHELD_HEAD, T.WITHHELD_COLUMNS, now, T.WITHHELD_NONE, "withheld"),
        _section(T.CLEARED_HEAD.format(count=shown), T.CLEARED_COLUMNS, cleared, T.CLEARED_NONE, "cleared"),
        f'<p class="muted">{esc(T.WITHHELD_ABOUT)}</p>',
        _section(T.PIN_HEAD, T.TOOLS_COLUMNS, pinned, T.TOOLS_NONE, "pinned"),
    ]
    body += [f'<p class="muted">{esc(n)}</p>' for n in notes]
    return page(T.TOOLS_HEAD, "".join(body))


def verify_page(intact: bool, lines: list[str]) -> str:
    verdict = T.VERIFY_INTACT if intact else T.VERIFY_BROKEN
    body = (
        f'<h1>{esc(T.VERIFY_HEAD)}</h1><p class="verdict {"ok" if intact else "refused"}">{esc(verdict)}</p>'
        f"<pre>{esc(chr(10).join(lines))}</pre>"
    )
    return page(T.VERIFY_HEAD, body)
