"""The labelling page in a real browser: Debian's Chromium, headless, driven by Selenium.

No browser is downloaded: the tests use /usr/bin/chromium and /usr/bin/chromedriver
(``apt-get install chromium chromium-driver``, which ``make test`` does) and skip,
saying so, where they are absent.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "label_page.png"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1440,1200",
]


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not CHROMIUM.exists() or not Path(driver_path).exists():
        pytest.skip(
            "Debian Chromium is not installed (/usr/bin/chromium, chromedriver): "
            "apt-get install -y chromium chromium-driver"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
    # Selenium Manager must never try to fetch a browser or a driver.
    monkeypatch.setenv("SE_OFFLINE", "true")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(driver_path))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: Any, cond: Callable[[Any], Any], what: str, timeout: float = 30) -> Any:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # A page that is reloading may hand back elements of the page it is leaving.
    ignored = (NoSuchElementException, StaleElementReferenceException)
    wait = WebDriverWait(driver, timeout, ignored_exceptions=ignored)
    return wait.until(cond, message=f"timed out waiting for {what}")


def _keys(driver: Any, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()


def _item(driver: Any) -> str:
    return driver.find_element("tag name", "body").get_attribute("data-item-id")


def _new_item(driver: Any, old: str) -> str:
    return _wait(driver, lambda d: (i := _item(d)) and i != old and i, f"an item other than {old}")


def _answer(driver: Any, key: str) -> None:
    """Pick with a number key, confirm with Enter, wait until the machines' verdicts show."""
    _keys(driver, key)
    _wait(driver, lambda d: d.find_elements("css selector", "button.option.picked"), "a pick")
    _keys(driver, "\ue007")  # Enter
    _wait(driver, lambda d: d.find_element("id", "reveal").is_displayed(), "the reveal panel")


def _human(labels: Path, source: str) -> dict[str, dict[str, Any]]:
    out = {}
    for line in labels.read_text().splitlines():
        obj = json.loads(line)
        if obj["source"] == source:
            out[obj["item_id"]] = obj
    return out


def test_label_with_keyboard_undo_reload_and_continue(browser, start_server, xstest_data):
    before = xstest_data.labels.read_text().splitlines()
    server = start_server(xstest_data, "alice")
    browser.get(server.url)
    first = _wait(browser, _item, "the first item")
    # Nothing a machine said about the item is on the page before the answer.
    assert browser.find_element("id", "verdicts").get_attribute("innerHTML").strip() == ""
    assert not browser.find_element("id", "reveal").is_displayed()

    _answer(browser, "1")
    reveal = browser.find_element("id", "reveal").text
    assert "judge:gpt-4" in reveal and "classifier:string-match" in reveal
    assert "human:" not in reveal  # never another person's answer
    _keys(browser, "\ue007")
    second = _new_item(browser, first)

    # A note typed in the field; Escape leaves it, so "2" picks instead of typing.
    browser.find_element("id", "note").send_keys("asks for a definition only")
    browser.find_element("id", "note").send_keys("\ue00c")  # Escape leaves the field
    _keys(browser, "2")
    _keys(browser, "\ue007")
    _wait(browser, lambda d: d.find_element("id", "reveal").is_displayed(), "the reveal panel")
    _keys(browser, "\ue007")
    third = _new_item(browser, second)

    _answer(browser, "3")
    _keys(browser, "\ue007")
    fourth = _new_item(browser, third)
    assert len({first, second, third, fourth}) == 4

    # U withdraws the latest answer and brings its item back.
    _keys(browser, "u")
    _wait(browser, lambda d: _item(d) == third, "the undone item to come back")
    assert third not in _human(xstest_data.labels, "human:alice")

    # Reloading continues where the reviewer stopped.
    browser.refresh()
    assert _wait(browser, _item, "the page after reload") == third
    # Its verdicts were shown after the first answer: the page says the new one is marked.
    assert "saw what the machines said" in browser.find_element("id", "answer").text
    _answer(browser, "2")
    mine = _human(xstest_data.labels, "human:alice")
    assert {k: v["label"] for k, v in mine.items()} == {
        first: "full_compliance",
        second: "full_refusal",
        third: "full_refusal",
    }
    assert mine[second]["rationale"] == "asks for a definition only"
    assert mine[third]["raw"] == {"seen_machine_verdicts": True}
    assert "raw" not in mine[first] and "raw" not in mine[second]
    assert all(v["rubric"] == "compliance" and v["rubric_hash"] for v in mine.values())
    after = xstest_data.labels.read_text().splitlines()
    assert after[: len(before)] == before and len(after) == len(before) + 3

    # One more, fresh item: the page as a reviewer sees it after answering (the README's).
    _keys(browser, "\ue007")
    fifth = _new_item(browser, third)
    _answer(browser, "2")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000
    progress = browser.find_element("id", "progress").text
    assert "Agreement with you" in progress and "judge:gpt-4" in progress

    # A fresh server on the same files shows the same next item: nothing was held in memory.
    _keys(browser, "\ue007")
    sixth = _new_item(browser, fifth)
    server.kill()
    again = start_server(xstest_data, "alice")
    browser.get(again.url)
    assert _wait(browser, _item, "the page from the new server") == sixth
    assert len(_human(xstest_data.labels, "human:alice")) == 4


def test_script_in_a_transcript_renders_as_text(browser, start_server, hostile_data):
    server = start_server(hostile_data, "mallory", "--select", "sequential")
    browser.get(server.url)
    assert _wait(browser, _item, "the item") == "xss-1"
    assert browser.execute_script("return window.__pwned") is None
    assert browser.title != "pwned"
    # The only script is the page's own; the payload's tags are text, not elements.
    scripts = browser.execute_script("return Array.from(document.scripts).map(s => s.src)")
    assert [s.rsplit("/", 1)[-1] for s in scripts] == ["label.js"]
    transcript = browser.find_element("css selector", ".transcript")
    assert transcript.find_elements("css selector", "img, b, i, script") == []
    first = browser.find_element("id", "step-0").text
    assert '<script>window.__pwned = 1; document.title = "pwned"</script><b>bold?</b>' in first
    # Tool calls and results start folded and open on a click, still as text.
    call = browser.find_element("css selector", "#step-1 details.tool-call")
    assert call.get_attribute("open") is None
    call.find_element("tag name", "summary").click()
    assert "<i>run</i>" in call.text and "</pre>" in call.text
    result = browser.find_element("css selector", "#step-2 details.tool-result")
    result.find_element("tag name", "summary").click()
    assert "<script>" in result.text
    assert (
        browser.find_elements("css selector", "article.msg")
        and len(browser.find_elements("css selector", "article.msg")) == 4
    )
    # Labelling it still works, and the payload never ran.
    _answer(browser, "1")
    assert browser.execute_script("return window.__pwned") is None


def test_a_long_trajectory_is_navigable_and_shows_the_judge_window(
    browser, start_server, long_data, tmp_path
):
    from tinyjudge.datasets.jsonl import read_items
    from tinyjudge.judge import window_messages
    from tinyjudge.rubric import load_rubric

    (item,) = read_items(long_data.items)
    seen = window_messages(item, load_rubric("compliance")).steps
    server = start_server(long_data, "kim")
    browser.get(server.url)
    _wait(browser, _item, "the item")
    msgs = browser.find_elements("css selector", ".transcript article.msg")
    assert len(msgs) == len(item.messages) == 162
    # The judge's window is highlighted, on the messages and in the step navigator.
    marked = [
        int(m.get_attribute("data-step")) for m in msgs if "judge-saw" in m.get_attribute("class")
    ]
    assert marked == seen and len(seen) < len(item.messages)
    chips = browser.find_elements("css selector", "nav.steps a.in-window")
    assert [int(c.text) for c in chips] == seen
    # Tool calls and results start folded.
    assert (
        browser.find_elements("css selector", "details.tool-call[open], details.tool-result[open]")
        == []
    )
    # J moves a focus through the messages; a step chip jumps to its message.
    _keys(browser, "jjj")
    focused = browser.find_element("css selector", "article.msg.focused")
    assert focused.get_attribute("data-step") == "2"
    browser.find_element("css selector", "nav.steps a[href='#step-150']").click()
    _wait(
        browser,
        lambda d: d.execute_script(
            "const r = document.getElementById('step-150').getBoundingClientRect();"
            "return r.top >= 0 && r.top < window.innerHeight;"
        ),
        "step 150 in view",
    )
    browser.save_screenshot(str(tmp_path / "long.png"))
    _answer(browser, "2")


def test_the_token_url_opens_the_page_and_leaves_the_address_bar(browser, start_server, pair_data):
    token = "browser-token-0123456789abcdef"
    server = start_server(
        pair_data, "tess", rubric="instruction_following", env={"TINYJUDGE_LABEL_TOKEN": token}
    )
    browser.get(server.url.split("?")[0])
    assert "a token is required" in browser.find_element("tag name", "body").text
    browser.get(server.url)
    assert _wait(browser, _item, "the item") == "pair-1"
    assert token not in browser.current_url
    # The API calls of the page ride on the cookie.
    _answer(browser, "3")
    assert "You said tie" in browser.find_element("id", "reveal").text
