"""Load test of the reward server on loopback, bounded in time; prints and saves JSON.

For one model directory it measures, in the same run:
  * offline batch scoring (``score_items`` at batch 64): the ceiling;
  * ``tinyjudge serve`` with micro-batching on (``--max-batch 64``) and off (``--max-batch 1``);
  * the simplest server a user would write: a FastAPI handler that runs the model
    once per request.
Each server runs in its own process (so its RSS can be read) and gets N concurrent
clients posting one item per request for D seconds; the clients stop by themselves.
Every request carries an item no one has scored before (a counter is appended to the
reply), so a model with an embedding cache (the probe tier) gets no cache hits, and the
offline ceiling is measured on fresh items the same way.

    .venv/bin/python bench/serve_load.py --model-dir runs/demo/rm --clients 64 --seconds 30
    (without --model-dir it trains a linear-tier model on the bundled XSTest sample)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "results" / "serve_load.json"

NAIVE_SERVER = textwrap.dedent(
    """
    import sys, uvicorn
    from fastapi import FastAPI
    from tinyjudge.distill import load_model
    from tinyjudge.records import Item

    model = load_model(sys.argv[1])
    app = FastAPI()

    @app.post("/score")
    def score(body: dict) -> dict:
        items = [Item.model_validate(x) for x in body["items"]]
        return {"labels": [lab.model_dump(mode="json") for lab in model.score_items(items)]}

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok"}

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    """
)


RUN = f"{os.getpid()}-{time.time_ns()}"


def fresh(payload: dict, n: int, tag: str) -> dict:
    """A copy of a one-item payload whose reply text no one has scored before.

    ``tag`` differs between the configurations of one run: they share the probe's
    on-disk embedding cache, so a repeated text would be a cache hit for the later ones.
    """
    item = json.loads(json.dumps(payload["items"][0]))
    item["id"] = f"{item['id']}#{tag}-{n}"
    item["messages"][-1]["content"] += f"\n[{RUN}-{tag}-{n}]"
    return {"items": [item]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds (user + system) used so far by ``pid``, or by this process."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(cmd: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not become healthy in 120 s")


async def load(url: str, payloads: list[dict], clients: int, seconds: float, tag: str) -> dict:
    """``clients`` concurrent loops posting one payload each until ``seconds`` pass."""
    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(k: int) -> None:
        nonlocal errors
        i = k
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            try:
                r = await http.post(f"{url}/score", json=fresh(payloads[i % len(payloads)], i, tag))
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                latencies.append(time.perf_counter() - t0)
            else:
                errors += 1
            i += clients

    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        wall = time.perf_counter() - t0
    lat = np.array(latencies) * 1000
    return {
        "requests": len(latencies),
        "errors": errors,
        "wall_s": round(wall, 2),
        "items_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 2) if len(lat) else None,
        "p99_ms": round(float(np.percentile(lat, 99)), 2) if len(lat) else None,
    }


def run_server_config(name: str, cmd: list[str], port: int, payloads: list[dict], args) -> dict:
    proc = start(cmd, port)
    try:
        url = f"http://127.0.0.1:{port}"
        warm = min(3.0, args.seconds)
        asyncio.run(load(url, payloads, args.clients, warm, f"{name}-warm"))
        rss_start = rss_mib(proc.pid)
        server_cpu0, client_cpu0 = cpu_s(proc.pid), cpu_s()
        result = asyncio.run(load(url, payloads, args.clients, args.seconds, name))
        server_cpu = cpu_s(proc.pid) - server_cpu0
        # The clients share this machine's cores with the server: what they used
        # was not available to it.
        result["server_cpu_s"] = round(server_cpu, 1)
        result["client_cpu_s"] = round(cpu_s() - client_cpu0, 1)
        result["items_per_server_cpu_s"] = round(result["requests"] / server_cpu, 2)
        result["rss_start_mib"] = round(rss_start, 1)
        result["rss_end_mib"] = round(rss_mib(proc.pid), 1)
        if name.startswith("tinyjudge"):
            metrics = httpx.get(f"{url}/metrics").text
            count = total = 0.0
            for line in metrics.splitlines():
                if line.startswith("tinyjudge_batch_size_count"):
                    count = float(line.split()[-1])
                if line.startswith("tinyjudge_batch_size_sum"):
                    total = float(line.split()[-1])
            result["mean_batch"] = round(total / count, 1) if count else None
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"{name:<28} {json.dumps(result)}", flush=True)
    return result


def soak(cli: list[str], payloads: list[dict], args: argparse.Namespace, model_dir: Path) -> None:
    """Serve with batching on under constant load; record RSS after every 10 s round.

    Runs merge into ``serve_soak.json`` keyed by the server's extra environment
    (``--server-env``), so allocator settings can be compared side by side.
    """
    env = dict(kv.split("=", 1) for kv in args.server_env)
    port = free_port()
    proc = start([*cli, "--port", str(port)], port, env)
    rounds = []
    try:
        for k in range(args.soak):
            r = asyncio.run(
                load(f"http://127.0.0.1:{port}", payloads, args.clients, 10, f"soak{k}")
            )
            r["rss_mib"] = round(rss_mib(proc.pid), 1)
            rounds.append(r)
            print(f"round {k}: {json.dumps(r)}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = args.out.with_name("serve_soak.json")
    saved = json.loads(out.read_text()) if out.exists() else {}
    saved[" ".join(args.server_env) or "default"] = {
        "command": " ".join(sys.argv),
        "model_dir": str(model_dir),
        "server_env": env,
        "clients": args.clients,
        "rss_mib_first_last": [rounds[0]["rss_mib"], rounds[-1]["rss_mib"]] if rounds else None,
        "rounds": rounds,
    }
    out.write_text(json.dumps(saved, indent=2) + "\n")
    print(f"saved {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model-dir", type=Path, default=None)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--soak",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only a memory soak: batching on, ROUNDS x 10 s, RSS after each",
    )
    ap.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="soak: extra environment for the server (e.g. MALLOC_ARENA_MAX=2)",
    )
    ap.add_argument(
        "--smoke", action="store_true", help="batching on only, 4 clients for 2 s (a test)"
    )
    args = ap.parse_args()
    if args.smoke:
        args.clients, args.seconds = 4, 2.0

    from tinyjudge.datasets.importers import run_import
    from tinyjudge.demo import bundled_sample
    from tinyjudge.distill import LinearRM, load_model

    imported = run_import("xstest", bundled_sample())
    items = imported.items
    model_dir = args.model_dir
    tmp = tempfile.TemporaryDirectory()
    if model_dir is None:
        teacher = {
            x.item_id: x.label
            for x in imported.labels
            if x.source == "judge:gpt-4" and x.status == "ok"
        }
        train = [it for it in items if it.id in teacher]
        model_dir = Path(tmp.name) / "rm"
        LinearRM("compliance").fit(train, [teacher[it.id] for it in train]).save(model_dir)
    payloads = [{"items": [it.model_dump(mode="json", exclude_none=True)]} for it in items]
    py = sys.executable
    cli = [py, "-m", "tinyjudge.cli", "serve", str(model_dir)]
    if args.soak:  # the soak compares the server with itself over time: no offline ceiling
        soak(cli, payloads, args, model_dir)
        return

    # Offline ceiling: the same model scoring fresh items in batches of 64.
    from tinyjudge.records import Item

    model = load_model(model_dir)
    warm = [fresh(p, k, "offline-warm")["items"][0] for k, p in enumerate(payloads[:4])]
    model.score_items(
        [Item.model_validate(x) for x in warm]
    )  # loads the encoder, like a server's warm-up
    n, t0, cpu0 = 0, time.perf_counter(), cpu_s()
    while time.perf_counter() - t0 < min(args.seconds, 15):
        batch = [
            Item.model_validate(
                fresh(payloads[(n + j) % len(payloads)], n + j, "offline")["items"][0]
            )
            for j in range(64)
        ]
        model.score_items(batch, batch_size=64)
        n += len(batch)
    offline = n / (time.perf_counter() - t0)
    offline_per_cpu = n / (cpu_s() - cpu0)
    print(
        f"{'offline batch scoring':<28} {offline:.1f} items/s, {offline_per_cpu:.2f} per CPU-s",
        flush=True,
    )

    results: dict[str, dict] = {}
    configs = [
        ("tinyjudge batching on", ["--max-batch", "64"]),
        ("tinyjudge batching off", ["--max-batch", "1"]),
    ]
    for name, extra in configs[:1] if args.smoke else configs:
        port = free_port()
        results[name] = run_server_config(
            name, [*cli, "--port", str(port), *extra], port, payloads, args
        )
    if args.smoke:  # one server: no ratios to report
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"smoke": True, "servers": results}, indent=2) + "\n")
        print(f"saved {args.out}")
        return
    naive = Path(tmp.name) / "naive_server.py"
    naive.write_text(NAIVE_SERVER)
    port = free_port()
    results["naive per-request handler"] = run_server_config(
        "naive per-request handler",
        [py, str(naive), str(model_dir), str(port)],
        port,
        payloads,
        args,
    )

    on = results["tinyjudge batching on"]["items_per_s"]
    report = {
        "command": " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "model_dir": str(model_dir),
        "model": model.name,
        "tier": model.tier,
        "clients": args.clients,
        "seconds": args.seconds,
        "offline_items_per_s": round(offline, 1),
        "offline_items_per_cpu_s": round(offline_per_cpu, 2),
        "servers": results,
        "ratios": {
            "batching_on_over_off": round(on / results["tinyjudge batching off"]["items_per_s"], 2),
            "server_over_offline": round(on / offline, 3),
            "server_over_offline_per_cpu_s": round(
                results["tinyjudge batching on"]["items_per_server_cpu_s"] / offline_per_cpu, 3
            ),
            "batching_on_over_naive": round(
                on / results["naive per-request handler"]["items_per_s"], 2
            ),
        },
        "threads": "tinyjudge serve sets OMP_WAIT_POLICY=PASSIVE (unless set); the naive "
        "server runs with the default, as a user's own script would",
        "openrlhf": "not compared: OpenRLHF needs deepspeed/vLLM/CUDA and does not install here",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["ratios"]))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
