"""The console in a real browser: Debian's chromium, headless, driven by Playwright.

A real ``serve`` with the fake bank (``test_serve_process``'s world and host) makes a payment
wait; the console runs as its own child (``console_fixtures``); the operator's clicks and keys
go through chromium. Effects are counted: the fake bank's ledger, the approval rows, what the
model reads on its next identical call. Each test saves a screenshot in its tmp_path.

Skipped, saying why, only where /usr/bin/chromium is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.console_fixtures import Running, console
from tests.harness import is_error, text_of
from tests.program.test_serve_process import World, prefix, proxy, world
from tests.program.test_watch import stub, wait_lines
from tests.waiting import until_served

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.program,
    pytest.mark.anyio,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no {CHROMIUM}: apt-get install chromium"),
]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
NINA = {"to": "nina", "amount": 12}
WAIT_MS = 15_000  # a generous bound for a loaded machine; the page itself polls every 0.2 s


@asynccontextmanager
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


async def signed_in(chromium: Any, c: Running, **context: Any) -> tuple[Any, Any]:
    """A new context and page that opened the console's link (the cookie is its session's)."""
    ctx = await chromium.new_context(**context)
    page = await ctx.new_page()
    await page.goto(c.url)
    assert page.url == c.origin + "/"  # the token left the address at once
    return ctx, page


async def shot(page: Any, tmp_path: Path, name: str) -> None:
    await page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)


def approval_row(w: World) -> Any:
    [approval] = w.approvals()
    return approval


@asynccontextmanager
async def scene(tmp_path: Path, argv: list[str], env: dict[str, str]) -> AsyncIterator[tuple[World, Any, Running]]:
    async with world(tmp_path, argv, env) as w, proxy(w) as host:
        until_served(w.db)  # serve opens its database after initialize; the console refuses none
        with console(argv, env, w.config) as c:
            yield w, host, c


async def test_a_waiting_payment_appears_and_an_approval_with_its_confirmation_pays_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with scene(tmp_path, program_argv, program_env) as (w, host, c), browser() as chromium:
        _, page = await signed_in(chromium, c, viewport={"width": 1100, "height": 940})  # docs/console.png
        await page.locator("#none-waiting").wait_for()
        await page.locator("#live-on").wait_for()  # the live update is on before the payment asks
        assert prefix(await host.call("bank_pay", NINA)) == "PENDING_APPROVAL"
        card = page.locator("article.approval")
        await card.wait_for(timeout=WAIT_MS)  # it arrived without the operator reloading
        assert "pay" in await card.locator("h2").inner_text()
        assert '"nina"' in await card.locator("table.fields").first.inner_text()
        await card.get_by_role("button", name="Approve…").click()
        dialog = page.locator("dialog#confirm")
        await dialog.wait_for()
        assert 'to: "nina"' in await dialog.inner_text()  # the payee named in the confirmation
        await shot(page, tmp_path, "confirmation")
        await dialog.get_by_role("button", name="Yes, approve pay").click()
        await page.locator("div.decided").wait_for()
        await shot(page, tmp_path, "decided")
        approval = approval_row(w)
        assert (approval.status, approval.decided_by) == ("approved", "tester (console)")
        paid = await host.call("bank_pay", NINA)
        assert text_of(paid) == "paid 12.00 to nina" and not is_error(paid)
        assert w.payments() == 1


async def test_a_rejection_with_a_note_is_what_the_model_reads(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with scene(tmp_path, program_argv, program_env) as (w, host, c), browser() as chromium:
        assert prefix(await host.call("bank_pay", NINA)) == "PENDING_APPROVAL"
        _, page = await signed_in(chromium, c, color_scheme="dark")
        await page.get_by_role("button", name="Reject…").click()
        dialog = page.locator("dialog#confirm")
        await dialog.get_by_label("Note for the model (required)").fill("nina was paid by hand")
        await shot(page, tmp_path, "reject-dark")
        await dialog.get_by_role("button", name="Reject pay").click()
        await page.locator("div.decided").wait_for()
        rejected = await host.call("bank_pay", NINA)
        assert prefix(rejected) == "REJECTED" and is_error(rejected)
        assert "nina was paid by hand" in text_of(rejected)
        assert approval_row(w).decided_by == "tester (console)" and w.payments() == 0


async def test_a_decision_elsewhere_leaves_the_page_and_a_stale_page_is_refused_with_what_happened(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with scene(tmp_path, program_argv, program_env) as (w, host, c), browser() as chromium:
        assert prefix(await host.call("bank_pay", NINA)) == "PENDING_APPROVAL"
        first, live = await signed_in(chromium, c)
        await live.locator("#live-on").wait_for()
        stale_ctx = await chromium.new_context(java_script_enabled=False)
        await stale_ctx.add_cookies(await first.cookies())
        stale = await stale_ctx.new_page()  # a confirmation page opened before the other decided
        await stale.goto(c.origin + "/")
        await stale.get_by_role("button", name="Approve…").click()
        await stale.get_by_role("button", name="Yes, approve pay").wait_for()
        second = await chromium.new_context()  # the second browser context decides first
        await second.add_cookies(await first.cookies())
        other = await second.new_page()
        await other.goto(c.origin + "/")
        await other.get_by_role("button", name="Reject…").click()
        await other.get_by_label("Note for the model (required)").fill("not today")
        await other.get_by_role("button", name="Reject pay").click()
        await other.locator("div.decided").wait_for()
        await live.locator("#live p").wait_for(timeout=WAIT_MS)  # the open page let it go by itself
        assert await live.locator("article.approval").count() == 0
        assert "rejected, by tester (console)" in (await live.locator("#live").inner_text()).replace(" is now", ",")
        await stale.get_by_role("button", name="Yes, approve pay").click()  # on the stale page
        refused = await stale.locator("main").inner_text()
        await shot(stale, tmp_path, "stale-refused")
        assert "Not decided" in refused and "rejected" in refused and "not today" in refused
        assert approval_row(w).status == "rejected" and w.payments() == 0


async def test_an_approval_with_the_keyboard_alone(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with scene(tmp_path, program_argv, program_env) as (w, host, c), browser() as chromium:
        assert prefix(await host.call("bank_pay", NINA)) == "PENDING_APPROVAL"
        _, page = await signed_in(chromium, c)
        for _ in range(40):  # Tab until the approve button holds the focus
            await page.keyboard.press("Tab")
            if await page.evaluate("document.activeElement.className") == "approve":
                break
        else:
            raise AssertionError("Tab never reached the approve button")
        await page.keyboard.press("Enter")
        await page.locator("dialog#confirm[open]").wait_for()
        assert await page.evaluate("document.activeElement.id") == "confirm-yes"
        await shot(page, tmp_path, "keyboard-confirm")
        await page.keyboard.press("Enter")
        await page.locator("div.decided").wait_for()
        assert approval_row(w).status == "approved"
        assert text_of(await host.call("bank_pay", NINA)) == "paid 12.00 to nina" and w.payments() == 1


async def test_at_360_pixels_wide_the_approval_fits_the_screen(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with scene(tmp_path, program_argv, program_env) as (_w, host, c), browser() as chromium:
        long_payee = {"to": "a-payee-with-a-very-long-name-" + "x" * 120, "amount": 7}
        assert prefix(await host.call("bank_pay", long_payee)) == "PENDING_APPROVAL"
        _, page = await signed_in(chromium, c, viewport={"width": 360, "height": 780})
        await page.locator("article.approval").wait_for()
        await shot(page, tmp_path, "narrow")
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360, width  # nothing sticks out sideways
        box = await page.get_by_role("button", name="Approve…").bounding_box()
        assert box is not None and box["x"] + box["width"] <= 360
        _, wide = await signed_in_again(chromium, c, page)
        await shot(wide, tmp_path, "wide")


async def signed_in_again(chromium: Any, c: Running, page: Any) -> tuple[Any, Any]:
    ctx = await chromium.new_context(viewport={"width": 1400, "height": 900})
    await ctx.add_cookies(await page.context.cookies())
    wide = await ctx.new_page()
    await wide.goto(c.origin + "/")
    return ctx, wide


async def test_without_javascript_the_confirmation_is_a_page_and_the_approval_pays_once(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    async with scene(tmp_path, program_argv, program_env) as (w, host, c), browser() as chromium:
        assert prefix(await host.call("bank_pay", NINA)) == "PENDING_APPROVAL"
        _, page = await signed_in(chromium, c, java_script_enabled=False)
        await page.get_by_role("button", name="Approve…").click()
        await page.wait_for_url("**/approve?**")  # a second page, not a dialog
        assert 'to: "nina"' in await page.locator("form.confirm").inner_text()
        await shot(page, tmp_path, "no-js-confirm")
        await page.get_by_role("button", name="Yes, approve pay").click()
        await page.locator("div.decided").wait_for()
        assert approval_row(w).decided_by == "tester (console)"
        assert text_of(await host.call("bank_pay", NINA)) == "paid 12.00 to nina" and w.payments() == 1
        await page.goto(c.origin + "/runs?status=all&tool=bank_pay")
        assert approval_row(w).run_id in await page.locator("table.runs").inner_text()


async def test_the_browser_is_started_with_a_private_page_that_signs_it_in_and_never_the_token(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    log = stub(tmp_path, "a-browser")  # what webbrowser runs: $BROWSER, with the address to open
    env = {**program_env, "DISPLAY": ":99", "BROWSER": str(tmp_path / "bin" / "a-browser")}
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        assert prefix(await host.call("bank_pay", NINA)) == "PENDING_APPROVAL"
        with console(program_argv, env, w.config, browser=True) as c:
            [line] = wait_lines(log, 1)
            opened = line.split("|", 1)[0]
            assert opened.startswith("file://") and c.token not in line  # no token on a command line
            opener = Path(opened.removeprefix("file://"))
            assert oct(opener.stat().st_mode)[-3:] == "600" and oct(opener.parent.stat().st_mode)[-3:] == "700"
            async with browser() as chromium:
                page = await (await chromium.new_context()).new_page()
                await page.goto(opened)
                await page.locator("article.approval").wait_for(timeout=WAIT_MS)  # signed in, on the console
                assert page.url == c.origin + "/"
                await shot(page, tmp_path, "opened")
        assert not opener.exists()  # removed when the console stopped
