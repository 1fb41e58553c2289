"""Does the reward an RL loop receives equal the offline score? References and normalisation.

Two measurements, each against ``score_items`` on the same items:

- SYCON, a linear push-back model distilled on three answering models and scored on the
  fourth (claude), whose rubric reads ``metadata.presupposition`` and
  ``metadata.correction``: the reward through TRL's ``reward_func`` (the reference columns as
  keyword arguments, as TRL passes them), through ``/get_reward`` (``metadata``) and through
  verl's ``compute_score_batch`` (``extra_info``); beside it, the blind reward (the same
  model on the items without their metadata), which is what those paths gave before they
  carried metadata.
- XSTest, a linear compliance model: every item read as the reward server reads it
  (``read_item``) against the item as given, all 1,500 items.

    nice -n 10 .venv/bin/python bench/reward_references.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM, load_model
from tinyjudge.integrations.trl import reward_func
from tinyjudge.integrations.verl import compute_score_batch
from tinyjudge.records import Item, Unread
from tinyjudge.serve import create_app, read_item

RESULTS = Path(__file__).parent / "results" / "reward_references.json"
REFS = ("presupposition", "correction")


def _gap(a: list[float], b: list[float]) -> dict:
    d = np.abs(np.asarray(a) - np.asarray(b))
    flips = int(sum((x >= 0.5) != (y >= 0.5) for x, y in zip(a, b, strict=True)))
    return {"max_abs_diff": float(d.max()), "mean_abs_diff": float(d.mean()), "label_flips": flips}


def sycon(data: Path, limit: int | None) -> dict:
    import threading

    import uvicorn

    got = run_import("sycon", data / "sycon")
    teacher = {lab.item_id: lab.label for lab in got.labels if lab.status == "ok"}
    train = [it for it in got.items if it.metadata["answering_model"] != "claude"]
    test = [it for it in got.items if it.metadata["answering_model"] == "claude"][:limit]
    model_dir = Path(tempfile.mkdtemp()) / "rm"
    LinearRM("pushback_under_pressure").fit(train, [teacher[it.id] for it in train]).save(model_dir)
    model = load_model(model_dir)
    offline = [lab.score for lab in model.score_items(test)]
    blind = model.predict_proba([it.model_copy(update={"metadata": {}}) for it in test])
    blind_reward = [float(p) for p in blind[:, model.classes_.index("holds")]]
    dump = [[m.model_dump(exclude_none=True) for m in it.messages] for it in test]
    columns = {k: [it.metadata[k] for it in test] for k in REFS}
    meta = [{k: it.metadata[k] for k in REFS} for it in test]
    trl = reward_func(model_dir)(
        prompts=[d[:-1] for d in dump], completions=[d[-1:] for d in dump], **columns
    )
    infos = [{"messages": d[:-1], **m} for d, m in zip(dump, meta, strict=True)]
    answers = [d[-1]["content"] for d in dump]
    verl = compute_score_batch(["sycon"] * len(test), answers, [None] * len(test), infos,
                               model=str(model_dir))  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(create_app(model), port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    r = httpx.post(f"http://127.0.0.1:{port}/get_reward",
                   json={"query": dump, "metadata": meta}, timeout=300)  # fmt: skip
    server.should_exit = True
    thread.join(timeout=10)
    return {
        "n": len(test),
        "trl": _gap(trl, offline),
        "get_reward": _gap(r.json()["rewards"], offline),
        "verl": _gap(verl, offline),
        "blind_as_before": _gap(blind_reward, offline),
    }


def xstest(data: Path) -> dict:
    got = run_import("xstest", data / "xstest")
    teacher = {lab.item_id: lab.label for lab in got.labels
               if lab.source == "judge:gpt-4" and lab.status == "ok"}  # fmt: skip
    train = [it for it in got.items if it.id in teacher]
    model = LinearRM("compliance").fit(train, [teacher[it.id] for it in train])
    offline = [lab.score for lab in model.score_items(got.items)]
    served = [Item.model_validate(read_item(it.model_dump(mode="json"), Unread()))
              for it in got.items]  # fmt: skip
    on = [lab.score for lab in model.score_items(served)]
    diff = np.abs(np.asarray(on) - np.asarray(offline))
    return {"n": len(diff), "differing": int((diff > 0).sum()), **_gap(on, offline)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true", help="40 SYCON items")
    args = ap.parse_args()
    start = time.perf_counter()
    out = {
        "sycon_held_out_claude": sycon(args.data, 40 if args.smoke else None),
        "xstest_served_vs_offline": xstest(args.data),
        "seconds": round(time.perf_counter() - start, 1),
        "machine": platform.platform(),
    }
    print(json.dumps(out, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
