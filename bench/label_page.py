"""Labelling page costs: the time to save one answer (SQLite commit + atomic rewrite of
the labels file) as the labels file grows, and a reviewer's keyboard loop over 50 XSTest
items in headless Chromium (when /usr/bin/chromium is installed).

    .venv/bin/python bench/label_page.py [--smoke] [--out PATH]

Prints a table and writes bench/results/label_page.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.label import LabelStore
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "results" / "label_page.json"


def answer_latency(n_lines: int, answers: int, tmp: Path) -> dict:
    rubric = load_rubric("compliance")
    path = tmp / f"labels_{n_lines}.jsonl"
    records = (
        Label(
            item_id=f"i{i % 100_000}",
            rubric="compliance",
            source=f"judge:m{i // 100_000}",
            label="full_refusal",
            probs={"full_refusal": 0.8, "full_compliance": 0.2},
            rationale="a judge's rationale of a typical length, " * 3,
        )
        for i in range(n_lines)
    )
    write_jsonl(path, records)
    store = LabelStore(path, rubric)
    times = []
    for i in range(answers):
        store.assign("bench", f"i{i}")
        t0 = time.perf_counter()
        store.answer("bench", f"i{i}", "full_compliance", "note")
        times.append(time.perf_counter() - t0)
    store.close()
    return {
        "labels_file_lines": n_lines,
        "labels_file_mb": round(path.stat().st_size / 1e6, 2),
        "answers": answers,
        "median_ms": round(1000 * statistics.median(times), 2),
        "max_ms": round(1000 * max(times), 2),
    }


def browser_loop(tmp: Path, n_items: int = 50) -> dict | None:
    if not Path("/usr/bin/chromium").exists() or not shutil.which("chromedriver"):
        return None
    from selenium import webdriver
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait

    result = run_import("xstest", REPO / "data" / "xstest_sample")
    write_jsonl(tmp / "items.jsonl", result.items)
    write_jsonl(tmp / "labels.jsonl", result.labels)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tinyjudge.cli", "label", str(tmp / "items.jsonl"),
         "--rubric", "compliance", "--labels", str(tmp / "labels.jsonl"), "--as", "bench",
         "--port", "0", "--budget", str(n_items)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    url = next(m.group(1) for line in proc.stdout if (m := re.search(r"open (http://\S+)", line)))
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1440,1000",
                 f"--user-data-dir={tmp / 'profile'}"):  # fmt: skip
        opts.add_argument(flag)
    driver = webdriver.Chrome(
        options=opts, service=webdriver.ChromeService(shutil.which("chromedriver"))
    )
    wait = WebDriverWait(driver, 30)
    per_item = []
    try:
        driver.get(url)
        for i in range(n_items):
            t0 = time.perf_counter()
            item = driver.find_element("tag name", "body").get_attribute("data-item-id")
            ActionChains(driver).send_keys(str(1 + i % 3)).send_keys("\ue007").perform()
            wait.until(lambda d: d.find_element("id", "reveal").is_displayed())
            ActionChains(driver).send_keys("\ue007").perform()
            wait.until(
                lambda d, old=item: (
                    d.find_element("tag name", "body").get_attribute("data-item-id") != old
                )
            )
            per_item.append(time.perf_counter() - t0)
    finally:
        driver.quit()
        proc.terminate()
        proc.wait()
    n_saved = sum(
        1 for line in (tmp / "labels.jsonl").read_text().splitlines()
        if json.loads(line)["source"] == "human:bench"
    )  # fmt: skip
    return {
        "items": n_items,
        "labels_saved": n_saved,
        "median_s_per_item": round(statistics.median(per_item), 3),
        "total_s": round(sum(per_item), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="one small file, 3 items (a test)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    sizes, answers, n_items = ((500,), 5, 3) if args.smoke else ((2_500, 25_000, 250_000), 20, 50)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        latency = [answer_latency(n, answers, tmp) for n in sizes]
        (tmp / "browser").mkdir()
        browser = browser_loop(tmp / "browser", n_items)
    print(f"{'labels file':>14} {'MB':>7} {'median ms':>10} {'max ms':>8}")
    for row in latency:
        print(f"{row['labels_file_lines']:>14} {row['labels_file_mb']:>7} "
              f"{row['median_ms']:>10} {row['max_ms']:>8}")  # fmt: skip
    if browser:
        b = browser
        print(f"browser: {b['items']} items by keyboard, {b['labels_saved']} saved, "
              f"median {b['median_s_per_item']} s/item (machine time, no reading)")  # fmt: skip
    else:
        print("browser: skipped (no /usr/bin/chromium)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "machine": platform.platform(), "python": platform.python_version(),
        "answer_latency": latency, "browser_loop": browser,
    }, indent=2) + "\n")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
