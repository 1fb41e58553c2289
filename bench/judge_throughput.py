"""Judge throughput against the local OpenAI-compatible server with simulated model latency.

Judgments per second at concurrency 1, 8 and 64 (each call waits ``--latency``
seconds on the server, 20 ms by default), and for a fully cached re-run of the
concurrency-64 run. The server runs in its own process, as a real endpoint
would, so the figures are the judge's (prompt, HTTP client, parsing, logprobs,
SQLite commit per judgment). Targets: >= 200/s at concurrency 64 and >= 5,000/s
cached. Items are XSTest trajectories from the bundled sample (prompts of about
2,000 tokens with the compliance rubric), recycled with new ids and content.

    .venv/bin/python bench/judge_throughput.py      (under a minute)

Concurrency 8 and 64 are run ``--repeats`` times on fresh content; the JSON keeps
every run and the best of each (noise from other processes only slows runs down).

Each row also gives the judge process's own CPU time per judgment, so that a
rate held down by a busy machine can be told apart from a slow client.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import tempfile
import time
from pathlib import Path

from tinyjudge.datasets.importers import run_import
from tinyjudge.judge import Judge
from tinyjudge.records import Item
from tinyjudge.testing import LocalServer, Reply, Request

RESULTS = Path(__file__).parent / "results" / "judge_throughput.json"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "xstest_sample"
PROBS = {"full_compliance": 0.7, "full_refusal": 0.2, "partial_refusal": 0.1}


def _respond(req: Request) -> Reply:
    text = json.dumps({"rationale": "It answers the request directly.", "label": "full_compliance"})
    return Reply(text, probs=PROBS)


def _serve(latency: float, port: int, ready: mp.Event) -> None:  # type: ignore[valid-type]
    srv = LocalServer(_respond, latency=latency, port=port)
    srv.start()
    ready.set()  # type: ignore[attr-defined]
    while True:
        time.sleep(3600)


def _items(n: int, tag: str) -> list[Item]:
    """``n`` sample items recycled under new ids (``bench-<tag>-<k>``), each with content of
    its own (the id in its last message), so that no two share an id or a cache key."""
    base = run_import("xstest", SAMPLE).items
    out = []
    for k in range(n):
        it, new_id = base[k % len(base)], f"bench-{tag}-{k}"
        last = it.messages[-1].model_copy(update={"content": f"{it.messages[-1].text} [{new_id}]"})
        out.append(it.model_copy(update={"id": new_id, "messages": [*it.messages[:-1], last]}))
    return out


def _row(run: str, conc: int, n: int, dt: float, cpu: float) -> dict[str, object]:
    return {
        "run": run,
        "concurrency": conc,
        "items": n,
        "seconds": round(dt, 3),
        "judgments_per_s": round(n / dt, 1),
        "client_cpu_ms_per_judgment": round(cpu / n * 1000, 3),
    }


def _bare_client(url: str, items: list[Item], conc: int) -> tuple[float, float]:
    """The ceiling: the bare openai client posting the judge's own requests, nothing else."""
    import asyncio

    import openai

    from tinyjudge.judge import build_messages
    from tinyjudge.rubric import load_rubric

    rubric = load_rubric("compliance")
    bodies = [
        {"model": "bench", "messages": build_messages(it, rubric), "logprobs": True} for it in items
    ]

    async def go() -> None:
        client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
        gate = asyncio.Semaphore(conc)

        async def one(body: dict[str, object]) -> None:
            async with gate:
                await client.post("/chat/completions", cast_to=object, body=body)

        await asyncio.gather(*(one(b) for b in bodies))
        await client.close()

    t, c = time.perf_counter(), time.process_time()
    asyncio.run(go())
    return time.perf_counter() - t, time.process_time() - c


def _best(rows: list[dict[str, object]]) -> dict[str, float]:
    """The best of the repeats per run: a busy machine only ever slows a run down."""
    best: dict[str, float] = {}
    for r in rows:
        name, rate = str(r["run"]), float(r["judgments_per_s"])  # type: ignore[arg-type]
        best[name] = max(best.get(name, 0.0), rate)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--port", type=int, default=18931)
    ap.add_argument("--n1", type=int, default=100, help="items at concurrency 1")
    ap.add_argument("--n8", type=int, default=300, help="items at concurrency 8")
    ap.add_argument("--n64", type=int, default=1200, help="items at concurrency 64")
    ap.add_argument("--repeats", type=int, default=3, help="runs at concurrency 8 and 64")
    ap.add_argument(
        "--smoke", action="store_true", help="a few items, two repeats (the smoke test)"
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.smoke:
        args.n1, args.n8, args.n64, args.repeats = 3, 8, 16, 2

    ready = mp.get_context("fork").Event()
    server = mp.get_context("fork").Process(
        target=_serve, args=(args.latency, args.port, ready), daemon=True
    )
    server.start()
    ready.wait(30)
    url = f"http://127.0.0.1:{args.port}/v1"
    rows = []
    plan = ((1, args.n1, 1), (8, args.n8, args.repeats), (64, args.n64, args.repeats))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for conc, n, repeats in plan:
                seen: list[Item] = []
                for rep in range(repeats):
                    # New content each repeat, so that no repeat is served from a cache.
                    items = _items(n, f"c{conc}r{rep}")
                    cache = Path(tmp) / f"c{conc}.sqlite"
                    judge = Judge(
                        "compliance", "bench", base_url=url, concurrency=conc, cache=cache
                    )
                    t, c = time.perf_counter(), time.process_time()
                    labels = judge.run(items)
                    dt, cpu = time.perf_counter() - t, time.process_time() - c
                    assert all(lab.label == "full_compliance" for lab in labels)
                    assert judge.summary.calls == n
                    seen += items
                    rows.append(_row(f"concurrency {conc}", conc, n, dt, cpu))
                    print(
                        f"concurrency {conc:>2}: {n} items in {dt:.2f}s = {n / dt:,.0f} "
                        f"judgments/s (client CPU {cpu / n * 1000:.2f} ms each)"
                    )
                if conc == 64:
                    # Every item of the repeats again, all from the one cache file.
                    t, c = time.perf_counter(), time.process_time()
                    judge.run(seen)
                    dt, cpu = time.perf_counter() - t, time.process_time() - c
                    m = len(seen)
                    assert judge.summary.calls == 0 and judge.summary.cache_hits == m
                    rows.append(_row("cached re-run", conc, m, dt, cpu))
                    print(f"cached re-run: {m} items in {dt:.2f}s = {m / dt:,.0f} judgments/s")
                    dt, cpu = _bare_client(url, items, conc)
                    rows.append(_row("bare openai client, same requests", conc, n, dt, cpu))
                    print(f"bare openai client: {n} requests in {dt:.2f}s = {n / dt:,.0f}/s")
    finally:
        server.kill()
    result = {
        "bench": "judge_throughput",
        "command": ".venv/bin/python bench/judge_throughput.py",
        "latency_s": args.latency,
        "server": "LocalServer (http.server threads) in a separate process on 127.0.0.1",
        "prompt": "compliance rubric + XSTest sample trajectory (about 2,000 tokens)",
        "targets": {"concurrency 64": 200, "cached re-run": 5000},
        "runs": rows,
        "best_judgments_per_s": _best(rows),
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },  # fmt: skip
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
